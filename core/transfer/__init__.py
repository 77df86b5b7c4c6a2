"""Moving an agent between machines and homes: one portable archive.

    from core.transfer import export_agent, import_agent
    export_agent("finn", "finn.agentos.tar.gz")                      # secrets left out
    import_agent("finn.agentos.tar.gz", as_name="finn2")             # re-embeds when needed
"""

from core.transfer.export import ExportResult, export_agent
from core.transfer.importer import ImportResult, import_agent

__all__ = ["ExportResult", "ImportResult", "export_agent", "import_agent"]
