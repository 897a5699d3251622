"""The prompt templates Funnybone ships, one or more per task type.

Written for this project in its own words, following the study designs in
PROTOCOLS.md. Each task type's judging side (judging/task_types/) names the one
a judge uses by default. Researchers edit them (each edit is a new version) or paste a
published prompt in their place. Templates use Django's template language with
autoescaping off; the variables are listed in ``judging.prompts.render``.
"""

from dataclasses import dataclass
from typing import Any

# HumorRank's closed vocabularies for the pairwise critic's feature lists.
HUMOR_MECHANISMS = (
    "incongruity",
    "wordplay",
    "absurdity",
    "surprise",
    "irony",
    "sarcasm",
    "observational",
    "narrative",
)
DELIVERY_FEATURES = (
    "timing",
    "conciseness",
    "deadpan",
    "escalation",
    "punchline_positioning",
    "framing_commitment",
)
FAILURE_FEATURES = (
    "cliché",
    "confusing",
    "offensive",
    "overexplained",
    "buried_punchline",
    "weak_punchline",
)


@dataclass(frozen=True)
class BuiltinTemplate:
    name: str
    task_type: str
    description: str
    system: str
    user: str
    response_schema: dict[str, Any] | None = None


PAIRWISE_CRITIC = BuiltinTemplate(
    name="humorrank-pairwise",
    task_type="pairwise",
    description="Comedy-critic verdict between two jokes on the same prompt, with reasons and feature lists.",
    system=(
        "You review comedy for a living. You compare jokes fairly: the order they are shown in tells you "
        "nothing, and length is not a virtue in itself. You always answer with one JSON object."
    ),
    user="""Two comedians each wrote a joke for the same prompt.

Prompt: {{ prompt }}

Joke A: {{ a }}

Joke B: {{ b }}

Decide which joke would get the bigger laugh from a general adult audience. Answer TIE only when you \
truly cannot separate them.

Reply with a JSON object with these fields:
- "reasoning": two or three sentences on why the winner works better (or why they are level).
- "decision": "A", "B" or "TIE".
- "humor_mechanisms": 1 to 3 mechanisms the better joke relies on, chosen from: {{ mechanisms }}.
- "delivery_features": 1 to 3 delivery strengths of the better joke, chosen from: {{ delivery }}.
- "failure_features": 1 to 3 weaknesses of the weaker joke, chosen from: {{ failures }}.
Use only words from those lists.""",
)

EXPLANATION_PREFERENCE = BuiltinTemplate(
    name="explanation-preference",
    task_type="pairwise",
    description="Which of two explanations of a joke explains it better (1, 2 or equal).",
    system="You judge explanations of jokes: does the reader come away understanding why the joke is funny?",
    user="""Here is a joke and two explanations of it.

Joke: {{ prompt }}{% if text %}
{{ text }}{% endif %}

Explanation 1: {{ a }}

Explanation 2: {{ b }}

Which explanation better makes clear what the joke plays on (the double meaning, the cultural reference, \
the twist), without errors or padding? Reply with a JSON object: {"reasoning": "<one or two sentences>", \
"decision": "1", "2" or "equal"}.""",
    response_schema={
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "decision": {"type": "string", "enum": ["1", "2", "equal"]},
        },
        "required": ["reasoning", "decision"],
    },
)

FUNNINESS_DIGIT = BuiltinTemplate(
    name="funniness-digit",
    task_type="ordinal",
    description="Rate how funny a typical adult audience would find the text; answer with the digit only.",
    system="You rate short comic texts the way a seasoned joke writer would.",
    user="""How funny would a typical adult audience find this? Judge the audience's likely reaction, not \
your own taste.
{% for point in scale %}
{{ point.point }} = {{ point.label }}{% endfor %}
{% if prompt %}
{{ prompt }}{% endif %}
{{ text }}

Answer with the single digit of your rating and nothing else.""",
)

PICK_FUNNIEST = BuiltinTemplate(
    name="pick-funniest",
    task_type="pick_one",
    description="Choose the funniest of N numbered options.",
    system="You pick winners in joke-writing contests.",
    user="""{{ question }}
{% if prompt %}
Prompt: {{ prompt }}
{% endif %}{% for c in candidates %}
Option {{ c.number }}: {{ c.text }}{% if c.context %} (written for: {{ c.context }}){% endif %}{% endfor %}

Reply with a JSON object {"choice": <the number of the option you pick, 1 to {{ n }}>}.""",
)

FUNNY_OR_NOT = BuiltinTemplate(
    name="funny-or-not",
    task_type="binary",
    description="Funny or not funny: one response to a prompt.",
    system="You decide whether short comic answers land.",
    user="""{% if prompt %}Prompt: {{ prompt }}
Response: {{ text }}{% else %}{{ text }}{% endif %}

Would most people find this funny? Reply with a JSON object {"label": "<one of: {{ label_values }}>"} \
where {% for o in labels %}"{{ o.value }}" means {{ o.label }}{% if not forloop.last %} and {% endif %}{% endfor %}.""",
)

EXPLANATION_QUALITY_DIRECT = BuiltinTemplate(
    name="explanation-quality",
    task_type="binary",
    description="Does the explanation fully explain the joke? Answered directly.",
    system="You check whether explanations of jokes get the joke.",
    user="""Joke: {{ prompt }}

Explanation: {{ text }}

Does this explanation fully account for what makes the joke funny? An explanation that misses the key \
wordplay or reference, or explains only part of it, does not. Reply with a JSON object \
{"label": "<one of: {{ label_values }}>"} where {% for o in labels %}"{{ o.value }}" means {{ o.label }}\
{% if not forloop.last %} and {% endif %}{% endfor %}.""",
)

EXPLANATION_QUALITY_STEPWISE = BuiltinTemplate(
    name="explanation-quality-stepwise",
    task_type="binary",
    description="Does the explanation fully explain the joke? Reason step by step, then decide.",
    system="You check whether explanations of jokes get the joke. You think before you decide.",
    user="""Joke: {{ prompt }}

Explanation: {{ text }}

First work out, step by step, what makes the joke funny: the setup, the twist, and any pun, cultural \
reference or sound-alike it depends on. Then compare that with the explanation: does it cover all of it, \
correctly? Reply with a JSON object {"reasoning": "<your steps>", "label": "<one of: {{ label_values }}>"} \
where {% for o in labels %}"{{ o.value }}" means {{ o.label }}{% if not forloop.last %} and {% endif %}{% endfor %}.""",
)

VOTE_ALLOCATION = BuiltinTemplate(
    name="vote-allocation",
    task_type="vote_allocation",
    description="Spread up to k votes over the funniest responses.",
    system="You vote in a comedy contest where many people answered the same prompt.",
    user="""Prompt: {{ prompt }}
{% for c in candidates %}
{{ c.number }}. {{ c.text }}{% endfor %}

You have up to {{ max_votes }} votes. Give them to the funniest responses; one response may get several. \
Reply with a JSON object {"votes": [<the number of each response you vote for, repeated for extra votes>]}.""",
)

MICRO_EDIT = BuiltinTemplate(
    name="micro-edit",
    task_type="micro_edit",
    description="Replace the marked word of a headline with one word to make it funny.",
    system="You write comic one-word edits of news headlines.",
    user="""Headline: {{ headline }}

Replace the word "{{ token }}" with a single different word so that the headline becomes funny. Reply with \
a JSON object {"replacement": "<one word>"}.""",
)

EDITED_HEADLINE_GRADE = BuiltinTemplate(
    name="edited-headline-grade",
    task_type="ordinal",
    description="Grade how funny an edited news headline is (one word replaced); answer with the digit only.",
    system="You grade comic one-word edits of news headlines.",
    user="""A news headline had one word replaced to make it funny.
{% if prompt %}
Original headline: {{ prompt }}{% endif %}
Edited headline: {{ text }}

How funny is the edited headline?
{% for point in scale %}
{{ point.point }} = {{ point.label }}{% endfor %}

Answer with the single digit of your grade and nothing else.""",
)

EXPLAIN_JOKE = BuiltinTemplate(
    name="explain-joke",
    task_type="explanation",
    description="Explain why a joke is funny.",
    system="You explain jokes clearly to someone who did not get them.",
    user="""{% if prompt %}{{ prompt }}
{% endif %}{{ text }}

Explain in a few sentences what makes this funny: the setup, the twist and anything it plays on. Reply with \
a JSON object {"text": "<your explanation>"}.""",
)

BEST_WORST = BuiltinTemplate(
    name="best-worst",
    task_type="best_worst",
    description="Mark the funniest and the least funny of four numbered jokes (best–worst scaling).",
    system=(
        "You judge joke-writing contests. The order the jokes are listed in tells you nothing, and length is "
        "not a virtue in itself. You always answer with one JSON object."
    ),
    user="""{% if prompt %}Prompt: {{ prompt }}
{% endif %}{% for c in candidates %}
Joke {{ c.number }}: {{ c.text }}{% endfor %}

Which joke would get the biggest laugh from a general adult audience, and which the smallest? They must be \
two different jokes. Reply with a JSON object {"best": <the number of the funniest joke, 1 to {{ n }}>, \
"worst": <the number of the least funny joke, 1 to {{ n }}>}.""",
)

BUILTIN_TEMPLATES: tuple[BuiltinTemplate, ...] = (
    PAIRWISE_CRITIC,
    EXPLANATION_PREFERENCE,
    FUNNINESS_DIGIT,
    EDITED_HEADLINE_GRADE,
    PICK_FUNNIEST,
    FUNNY_OR_NOT,
    EXPLANATION_QUALITY_DIRECT,
    EXPLANATION_QUALITY_STEPWISE,
    VOTE_ALLOCATION,
    MICRO_EDIT,
    EXPLAIN_JOKE,
    BEST_WORST,
)


def builtin(name: str) -> BuiltinTemplate | None:
    return next((t for t in BUILTIN_TEMPLATES if t.name == name), None)
