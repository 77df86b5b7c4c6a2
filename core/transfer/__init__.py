"""Moving an agent between machines and homes: one portable archive.

    from core.transfer import export_agent, import_agent
    export_agent("finn", "finn.agentos.tar.gz")                      # secrets left out
    import_agent("finn.agentos.tar.gz", as_name="finn2")             # its data only; re-embedded here
    import_agent("mine.agentos.tar.gz", trust=Trust(skills=True))    # an archive of your own: its skills too
"""

from core.transfer.export import ExportResult, export_agent
from core.transfer.importer import ImportResult, import_agent
from core.transfer.trust import Trust

__all__ = ["ExportResult", "ImportResult", "Trust", "export_agent", "import_agent"]
