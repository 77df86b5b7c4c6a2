"""What the people of ``recall_dialogues.py`` do and say: activities, trips, books, pets, jobs, small talk.

Each activity has tellings (an evidence turn, the question written from it as
people write benchmark questions, its answer, and a "when" question if the
telling is dated relative to the session), the friend's replies (which echo
the activity's words without being evidence), the teller's elaborations, a
photo caption, the friend's own remark about it, a question that asks for
every telling ("What has {p} painted?") and an inference question
("Would {p} enjoy ...?") whose evidence is the tellings.
"""

from __future__ import annotations

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Maria", "John", "Evan", "Sam", "Nate", "Joanna",
         "Audrey", "Andrew", "Tim", "Deborah", "Calvin", "Dave", "James", "Jolene", "Priya", "Omar"]

ACTIVITIES = {
    "pottery": {
        "keyword": "pottery",
        "tells": [
            ("I took a pottery class {rel} and made a little bowl with a leaf pattern",
             "What did {p} make in the pottery class?", "a bowl with a leaf pattern",
             "When did {p} start pottery?"),
            ("My clay mug finally came out of the kiln, the first thing I've glazed myself",
             "What did {p} glaze?", "a clay mug", None),
            ("I signed up for the advanced pottery workshop at the community center",
             "Where is {p}'s pottery workshop?", "the community center", None),
        ],
        "echo": ["Pottery sounds so relaxing!", "{t}, that's awesome, I've always wanted to try pottery.",
                 "Clay is so messy but so much fun, right?"],
        "more": ["It's so calming, I forget about everything else.",
                 "My hands were covered in mud the whole time."],
        "photo": "[shares a photo of a handmade bowl on a kitchen table]",
        "friend": "I tried a pottery wheel once and the clay flew everywhere.",
        "multi": "What pottery has {p} made?",
        "open": ("Would {p} enjoy a gift of ceramic tools?", "yes, she does pottery"),
    },
    "camping": {
        "keyword": "camping",
        "tells": [
            ("We went camping at the lake {rel}, the kids loved roasting marshmallows",
             "What did {p}'s kids love doing on the camping trip?", "roasting marshmallows",
             "When did {p} go camping?"),
            ("We camped in the mountains and saw the Perseid meteor shower, it was magical",
             "What did {p} see while camping in the mountains?", "the Perseid meteor shower", None),
            ("I bought a new tent for our next camping trip, it fits six people",
             "How many people does {p}'s new tent fit?", "six", None),
        ],
        "echo": ["Camping with kids sounds like an adventure!",
                 "{t}, I love camping, nothing beats sleeping under the stars.",
                 "Did you sleep at all in the tent?"],
        "more": ["We're already planning the next trip.", "No phones, no emails, just nature."],
        "photo": "[shares a photo of a tent pitched next to a lake at sunset]",
        "friend": "We used to go camping every summer when I was a kid.",
        "multi": "Where has {p} gone camping?",
        "open": ("Would {p} enjoy a weekend at a national park?", "yes, she loves the outdoors"),
    },
    "painting": {
        "keyword": "painting",
        "tells": [
            ("I painted a sunset over the lake {rel}, inspired by our last trip",
             "What did {p} paint recently?", "a sunset over the lake", "When did {p} paint a sunset?"),
            ("My abstract painting got accepted into the local art show",
             "Which of {p}'s paintings got into the art show?", "her abstract painting", None),
            ("I've been painting with watercolors in the mornings, it clears my head",
             "What kind of paint does {p} use in the mornings?", "watercolors", None),
        ],
        "echo": ["{t}, your paintings are always so beautiful!",
                 "Painting is such a great way to express yourself.",
                 "I can't even draw a stick figure, haha."],
        "more": ["Art lets me say things I can't put into words.",
                 "I want to fill a whole wall with them someday."],
        "photo": "[shares a photo of a canvas with bright orange and purple brush strokes]",
        "friend": "My mom used to paint, she still has her easel in the garage.",
        "multi": "What has {p} painted?",
        "open": ("Would {p} be interested in visiting an art museum?", "yes, she paints"),
    },
    "running": {
        "keyword": "running",
        "tells": [
            ("I ran a charity 5K {rel} for the children's hospital",
             "What charity race did {p} run?", "a 5K for the children's hospital",
             "When did {p} run a race for charity?"),
            ("I'm training for my first half marathon in the spring, ten miles this weekend",
             "What race is {p} training for?", "a half marathon", None),
            ("My new running shoes are so comfortable, no more blisters on long runs",
             "Why does {p} like her new running shoes?", "no more blisters", None),
        ],
        "echo": ["{t}, you're such a great runner!", "Running is so good for clearing your head.",
                 "I get tired just thinking about running that far."],
        "more": ["I'm slow, but I always finish.", "My knees are complaining a bit, though."],
        "photo": "[shares a photo of a race bib pinned to a shirt]",
        "friend": "I keep saying I'll start running, maybe next month.",
        "multi": "What running events has {p} done?",
        "open": ("Would {p} be likely to sign up for a triathlon?", "likely, she runs a lot"),
    },
    "writing": {
        "keyword": "writing",
        "tells": [
            ("I've been keeping a journal every night, writing helps me sort out my feelings",
             "Why does {p} keep a journal?", "writing helps her sort out her feelings", None),
            ("I joined a poetry class at the library {rel}, we read our poems out loud",
             "What class did {p} join at the library?", "a poetry class",
             "When did {p} start taking poetry lessons?"),
            ("One of my short stories got published in a small online magazine",
             "Where was {p}'s short story published?", "a small online magazine", None),
        ],
        "echo": ["{t}, that's incredible, you have such a way with words!", "Writing takes so much courage.",
                 "I'd love to read your stuff sometime."],
        "more": ["It's scary to share it, but it feels good.",
                 "I write mostly late at night when it's quiet."],
        "photo": "[shares a photo of a notebook full of handwriting next to a cup of tea]",
        "friend": "I kept a diary as a teenager, it's so embarrassing to read now.",
        "multi": "What kinds of writing has {p} done?",
        "open": ("Would {p} likely pursue writing as a career?",
                 "likely, she journals and writes poems and stories"),
    },
    "music": {
        "keyword": "music",
        "tells": [
            ("I played guitar at the open mic night {rel}, my hands were shaking",
             "Where did {p} play guitar?", "at the open mic night", "When did {p} perform at an open mic?"),
            ("I'm learning to play the violin now, my neighbors must hate me",
             "What instrument is {p} learning now?", "the violin", None),
            ("I wrote my first song, it's about my grandma's farm",
             "What is {p}'s first song about?", "her grandma's farm", None),
        ],
        "echo": ["{t}, I wish I could play an instrument!", "Music is the best therapy.",
                 "You have to play it for me!"],
        "more": ["I practice every night after dinner.", "It's hard, but I'm getting better."],
        "photo": "[shares a photo of an acoustic guitar leaning on a chair]",
        "friend": "I had piano lessons as a kid but I quit after a year.",
        "multi": "What instruments does {p} play?",
        "open": ("Would {p} enjoy going to a music festival?", "yes, she plays music"),
    },
    "gardening": {
        "keyword": "gardening",
        "tells": [
            ("We planted tomatoes and basil in the backyard {rel}",
             "What did {p} plant in the backyard?", "tomatoes and basil",
             "When did {p} start her vegetable garden?"),
            ("My sunflowers are taller than me now, the bees love them",
             "What flowers grew taller than {p}?", "sunflowers", None),
            ("I got my own plot at the community garden downtown",
             "Where is {p}'s garden plot?", "the community garden downtown", None),
        ],
        "echo": ["{t}, you have such a green thumb!", "Fresh tomatoes from the garden are the best.",
                 "I kill every plant I touch, haha."],
        "more": ["There's something peaceful about getting your hands in the dirt.",
                 "The squirrels keep stealing everything."],
        "photo": "[shares a photo of a raised bed full of green plants]",
        "friend": "My grandpa had a huge vegetable garden, I miss it.",
        "multi": "What has {p} grown in her garden?",
        "open": ("Would {p} appreciate a gift card to a plant nursery?", "yes, she gardens"),
    },
    "volunteering": {
        "keyword": "volunteering",
        "tells": [
            ("I volunteered at the animal shelter {rel}, we walked a dozen dogs",
             "What did {p} do at the animal shelter?", "walked dogs", "When did {p} volunteer with animals?"),
            ("I've started mentoring teens at the youth center on weekends",
             "Who does {p} mentor?", "teens at the youth center", None),
            ("We organized a food drive at church and collected three hundred cans",
             "How many cans did {p}'s food drive collect?", "three hundred", None),
        ],
        "echo": ["{t}, you have such a big heart.", "Giving back like that makes such a difference.",
                 "I should volunteer more, honestly."],
        "more": ["It reminds me how lucky I am.", "Seeing them smile makes it all worth it."],
        "photo": "[shares a photo of boxes of canned food stacked on a table]",
        "friend": "My company gives us a day off to volunteer, I never use it.",
        "multi": "Where has {p} volunteered?",
        "open": ("Would {p} be likely to work for a nonprofit?", "likely, she volunteers a lot"),
    },
    "baking": {
        "keyword": "baking",
        "tells": [
            ("I baked a chocolate cake for my mom's birthday {rel}",
             "What did {p} bake for her mom's birthday?", "a chocolate cake",
             "When did {p} bake a cake for her mom?"),
            ("I've been making homemade pasta from scratch, the ravioli came out great",
             "What has {p} been making from scratch?", "homemade pasta", None),
            ("I entered the pie contest at the county fair with my apple pie",
             "What pie did {p} enter in the county fair?", "apple pie", None),
        ],
        "echo": ["{t}, save me a slice next time!", "Homemade is always better.",
                 "You should open a bakery!"],
        "more": ["The kitchen was a total mess afterwards.", "I used my grandma's old recipe."],
        "photo": "[shares a photo of a chocolate cake with candles]",
        "friend": "I burned cookies last week, I'm hopeless in the kitchen.",
        "multi": "What has {p} baked or cooked?",
        "open": ("Would {p} enjoy a cooking class?", "yes, she bakes and cooks"),
    },
    "beach": {
        "keyword": "the beach",
        "tells": [
            ("We took the kids to the beach {rel}, they built a huge sandcastle",
             "What did {p}'s kids build at the beach?", "a huge sandcastle",
             "When did {p} go to the beach with her kids?"),
            ("I swim laps at the YMCA pool three mornings a week",
             "Where does {p} swim laps?", "the YMCA pool", None),
            ("I finally learned to surf on vacation, stood up on my third try",
             "What did {p} learn on vacation?", "to surf", None),
        ],
        "echo": ["{t}, I'm so jealous, I need some beach time!", "The ocean is so good for the soul.",
                 "Did you get sunburned?"],
        "more": ["The water was freezing but we didn't care.", "I feel like a kid again in the water."],
        "photo": "[shares a photo of a sandcastle with a little flag on top]",
        "friend": "I can't swim very well, I always stay in the shallow end.",
        "multi": "What does {p} do in the water?",
        "open": ("Would {p} enjoy a vacation on a tropical island?", "yes, she loves the beach and swimming"),
    },
    "photography": {
        "keyword": "photography",
        "tells": [
            ("I took photos of the sunrise at the pier {rel}, the colors were unreal",
             "Where did {p} photograph the sunrise?", "at the pier", "When did {p} take sunrise photos?"),
            ("I bought a used film camera at a flea market",
             "Where did {p} buy her film camera?", "a flea market", None),
            ("My photo of a heron won second place in the town contest",
             "What did {p}'s prize-winning photo show?", "a heron", None),
        ],
        "echo": ["{t}, you have such a great eye!", "Photography is such a cool hobby.",
                 "Send me the pictures!"],
        "more": ["I got up at five to catch the light.", "I'm still learning how to use manual focus."],
        "photo": "[shares a photo of a pier at sunrise with pink clouds]",
        "friend": "All my photos are blurry pictures of my dinner, haha.",
        "multi": "What has {p} photographed?",
        "open": ("Would {p} be interested in a photography exhibit?", "yes, she takes photos"),
    },
    "yoga": {
        "keyword": "yoga",
        "tells": [
            ("I went to a meditation retreat {rel}, three days without talking",
             "What was special about {p}'s meditation retreat?", "three days without talking",
             "When did {p} go on a retreat?"),
            ("I've been doing yoga every morning, it really helps my back pain",
             "What does yoga help {p} with?", "her back pain", None),
            ("I'm taking a course to become a certified yoga teacher",
             "What is {p} training to become?", "a yoga teacher", None),
        ],
        "echo": ["{t}, you always seem so calm now!", "Yoga is so good for stress.",
                 "I need to try that, my back is a mess."],
        "more": ["I feel so much more centered.", "Breathing exercises changed everything for me."],
        "photo": "[shares a photo of a yoga mat in a sunny room]",
        "friend": "I tried hot yoga once and almost fainted.",
        "multi": "How does {p} practice mindfulness?",
        "open": ("Would {p} enjoy a wellness spa weekend?", "yes, she does yoga and meditation"),
    },
    "hiking": {
        "keyword": "hiking",
        "tells": [
            ("We hiked to the waterfall at Eagle Creek {rel}, eight miles round trip",
             "Where did {p} hike to?", "the waterfall at Eagle Creek", "When did {p} hike to a waterfall?"),
            ("I climbed my first fourteener, the view from the summit was worth it",
             "What mountain milestone did {p} reach?", "her first fourteener", None),
            ("I joined a hiking club that goes out every other Saturday",
             "How often does {p}'s hiking club go out?", "every other Saturday", None),
        ],
        "echo": ["{t}, that's such a long hike!", "Hiking is the best way to spend a weekend.",
                 "Were your legs sore after?"],
        "more": ["We saw a deer right on the trail.", "I need better boots, honestly."],
        "photo": "[shares a photo of a waterfall in a forest]",
        "friend": "I get lost on every trail, I need a guide.",
        "multi": "Where has {p} hiked?",
        "open": ("Would {p} enjoy a trip to the Rocky Mountains?", "yes, she hikes"),
    },
    "dancing": {
        "keyword": "dancing",
        "tells": [
            ("I went to my first salsa class {rel}, I stepped on everyone's toes",
             "What kind of dance class did {p} go to?", "salsa", "When did {p} try salsa?"),
            ("Our dance group performed at the summer festival",
             "Where did {p}'s dance group perform?", "the summer festival", None),
            ("I've been learning tango with my partner on Thursday nights",
             "What dance is {p} learning with her partner?", "tango", None),
        ],
        "echo": ["{t}, I'd pay to see you dance!", "Dancing is such good exercise.", "I have two left feet."],
        "more": ["It's so much fun once you stop worrying.", "My feet hurt but I'm hooked."],
        "photo": "[shares a photo of dancers on a stage with colorful lights]",
        "friend": "I only dance at weddings, and only badly.",
        "multi": "What dances has {p} done?",
        "open": ("Would {p} enjoy a night at a Latin dance club?", "yes, she dances"),
    },
}

TRIPS = [("Japan", "the temples in Kyoto"), ("Italy", "the canals of Venice"),
         ("Mexico", "the pyramids at Teotihuacan"),
         ("Iceland", "the black sand beaches"), ("Peru", "Machu Picchu"), ("Canada", "the lakes in Banff"),
         ("Greece", "the white houses of Santorini"), ("Morocco", "the markets of Marrakech"),
         ("Norway", "the fjords"), ("Spain", "the Sagrada Familia in Barcelona"),
         ("Thailand", "the islands near Phuket")]
TRIP_TELLS = ["We just got back from {country}, {sight} took my breath away",
              "The highlight of our trip to {country} was {sight}",
              "I still dream about {sight}, {country} was amazing"]
TRIP_ECHO = ["{t}, I'm so jealous! {country} is on my bucket list.", "Traveling is the best, where to next?",
             "You have to show me all the pictures from the trip!"]

BOOKS = [("Becoming", "so inspiring"), ("The Midnight Library", "made me think about my choices"),
         ("Charlotte's Web", "I cried at the end"), ("Educated", "hard to put down"),
         ("Circe", "beautifully written"),
         ("The Alchemist", "about following your dreams"),
         ("Where the Crawdads Sing", "the marsh descriptions are gorgeous"),
         ("Little Women", "a classic I finally got to"), ("Dune", "the world building is insane")]
BOOK_TELLS = ["I just finished reading \"{book}\", {comment}", "I'm reading \"{book}\" right now, {comment}",
              "My book club picked \"{book}\", {comment}"]
BOOK_ECHO = ["{t}, I'll add it to my reading list!", "I love a good book recommendation.",
             "Is it better than the movie?"]

PETS = {"dog": ["Biscuit", "Luna", "Max", "Pepper", "Rocky", "Oscar"],
        "cat": ["Oliver", "Mochi", "Cleo", "Simba", "Nala"],
        "parrot": ["Kiwi", "Sunny", "Rio", "Mango"], "rabbit": ["Clover", "Thumper", "Hazel"],
        "guinea pig": ["Peanut", "Oreo", "Waffles"]}
PET_TELLS = ["We adopted a {kind} from the shelter {rel}, we named her {name}",
             "Meet {name}, our new {kind}! She's been with us since {rel}"]
PET_ECHO = ["Aww, {name} is adorable!", "{t}, a {kind}! I'm so happy for you.", "Pets make a house a home."]

JOBS = [("nurse", "St. Mary's hospital"), ("software developer", "a fintech startup"),
        ("teacher", "Lincoln Elementary"),
        ("chef", "an Italian bistro"), ("graphic designer", "an ad agency"), ("accountant", "a tax firm"),
        ("counselor", "a family clinic"), ("librarian", "the public library"),
        ("real estate agent", "a local agency")]
JOB_FIRST = "I've been working as a {job} at {place} for a few years now, it keeps me busy"
JOB_LATER = ["Big news, I quit my old job! I'm a {job} at {place} now",
             "I started a new job last month, I'm a {job} at {place}"]
JOB_ECHO = ["{t}, congratulations! How do you like it?", "Work can be so exhausting.", "That's a big change!"]

CITIES = ["Portland", "Denver", "Austin", "Boston", "Seattle", "Chicago", "Nashville", "San Diego", "Atlanta"]
MOVE_TELLS = ["We moved to {city} {rel}, there are boxes everywhere",
              "We finally moved into our new place in {city} {rel}"]
MOVE_ECHO = ["{t}, a new city! How's the neighborhood?", "Moving is the worst, I hate packing."]

FAMILY = [  # (what happened, the question written from it, a reply that echoes it)
    ("My sister got married {rel}, I cried through the whole ceremony",
     "When did {p}'s sister have her wedding?",
     "Weddings always make me cry too! Your sister must have looked beautiful."),
    ("My daughter started kindergarten {rel}, she was so brave", "When did {p}'s daughter begin school?",
     "Kindergarten already? They grow up so fast, {t}!"),
    ("We threw a party for my grandma's 90th birthday {rel}",
     "When did {p} celebrate her grandma's birthday?",
     "Ninety! Your grandma is amazing, {t}. What a party that must have been."),
    ("My son lost his first tooth {rel}, the tooth fairy had to find cash fast",
     "When did {p}'s son lose a tooth?",
     "Haha, the tooth fairy always runs out of cash at our house too."),
    ("I went to my high school reunion {rel}, everyone looked so different",
     "When did {p} attend a school reunion?",
     "Reunions are so weird, I skipped my high school one."),
    ("I went to a LGBTQ support group {rel} and it was so powerful",
     "When did {p} go to the LGBTQ support group?",
     "{t}, I'm so glad the support group helps you, you're so brave."),
    ("I got my driver's license renewed {rel}, the line took forever", "When did {p} renew her license?",
     "The DMV line is the worst, my license expires next year too."),
    ("My parents came to visit {rel}, we took them to the aquarium", "When did {p}'s parents come to visit?",
     "I love the aquarium! My parents never visit, you're lucky."),
]
FAMILY_ECHO = ["{t}, that must have been so special!", "Family is everything.", "Aww, I love that!"]

CHAT = ["I've been so busy with {kw} lately, it's my happy place.",
        "Honestly, {kw} has been keeping me sane these days.",
        "I spent the whole weekend on {kw} again.", "Not much new, just {kw} and work.",
        "{t}, you've got me thinking about {kw} too!", "I'm still into {kw}, can't get enough of it."]
"""Turns that mention an activity's key word without saying anything new about it."""

RELATIVE = [("yesterday", 1), ("last week", 7), ("last weekend", 7), ("two days ago", 2), ("last Friday", 3),
            ("last month", 30)]

OPENERS = ["Hey {o}! How have you been?", "Hi {o}, long time no talk!", "Good to hear from you, {o}.",
           "Hey! Sorry I've been quiet, {o}, life got hectic.", "Morning {o}! Got a minute to catch up?",
           "{o}! I have so much to tell you."]
GREET_BACK = ["Hey {o}! I'm good, busy as always. What's new?",
              "Hi! Doing well, thanks for asking. How about you?",
              "Oh it's great to hear from you! What have you been up to?",
              "Not bad at all! Tell me everything."]
PROMPTS = ["What have you been up to lately?", "Anything new with you?", "How was your week?",
           "So what's been going on with you?", "Any fun plans lately?"]
SMALL_TALK = ["That sounds amazing!", "Wow, I'm so happy for you.", "Haha, that's hilarious.",
              "Oh no, I'm sorry to hear that.", "That's so cool, tell me more!", "I totally get that.",
              "Thanks, {o}! That means a lot.", "Same here, it's been a busy few weeks.",
              "Nice! Keep me posted.",
              "Honestly I needed this chat today.", "Ugh, work has been crazy lately.", "I know, right?",
              "You always know what to say.", "The weather has been so nice lately.",
              "I've been trying to get more sleep.",
              "That's what friends are for.", "I'm so proud of you.", "It's been a rollercoaster, honestly.",
              "Life is all about the little things.", "I'm glad you're doing well.",
              "We should get coffee soon."]
CHATTER = ["My neighbor's dog barked all night again.", "I watched a documentary about sharks last night.",
           "My car broke down on the highway, what a day.", "I started a new podcast about history.",
           "My cousin just got engaged!", "I burned the pasta, oops.",
           "We're thinking about repainting the living room.",
           "My boss wants a report by Friday.", "The traffic downtown was terrible this morning.",
           "I finally cleaned out the garage.", "My phone screen cracked when I dropped it.",
           "I've been drinking way too much coffee.", "There's a new bakery near my office.",
           "I need a vacation, seriously.", "I found an old photo album at my parents' house.",
           "We've started taking evening walks after dinner.", "I signed up for a gym membership, we'll see.",
           "The kids have a science fair next week.", "I'm thinking of learning Spanish.",
           "It rained all weekend, so we stayed in and watched movies.",
           "My sister works at a hospital too, she's always tired.",
           "I want to visit Japan someday, it's on my list.",
           "The library near me is closing for renovations."]
CLOSERS = ["Take care, {o}! Talk soon.", "Bye! Catch up again soon.", "Gotta run, talk later!",
           "Thanks for the chat, {o}. Bye!", "Love chatting with you. See you!"]
