"""An adversarial corpus of judge answers, as real chat models write them, with what each must parse to.

Each case is (task type, config name, answer, expected, note). ``expected`` is
either the value the answer means, or ``UNPARSEABLE``; ``note`` is the parse
method for a value (``structured``, ``json``, ``json_repaired`` or
``text_pattern:<name>``) and a fragment of the reason for an unparseable one.
The configs are the studies' own: the built-in defaults, Chumor's (Chinese
jokes: explanation good/bad, which explanation is better) and Oogiri's
(Japanese: funny/not funny, pick the top answer of three).

Add to it whenever a model's answer is misread: the case that would have caught it.
"""

UNPARSEABLE = "unparseable"

#: Candidate keys in the order shown, per task type.
SHOWN = {
    "pairwise": ["cand-x", "cand-y"],
    "pick_one": ["opt-1", "opt-2", "opt-3"],
    "best_worst": ["k-w", "k-x", "k-y", "k-z"],
}

#: Study configs the cases refer to by name (None: the task type's default).
CONFIGS = {
    "default": None,
    "chumor_explanation": {
        "options": [
            {"value": "good", "label": "Fully explains"},
            {"value": "bad", "label": "Does not fully explain"},
        ],
        "positive": "good",
    },
    "chumor_preference": {
        "labels": ["Explanation 1", "Explanation 2", "Equally good"],
        "allow_tie": True,
        "side_by_side": False,
    },
    "no_tie": {"allow_tie": False},
}

X, Y, TIE = {"choice": "cand-x"}, {"choice": "cand-y"}, {"choice": "tie"}
FUNNY, NOT_FUNNY = {"label": "funny"}, {"label": "not_funny"}

CASES = [
    # -- pairwise: JSON as asked, and as it arrives mangled ------------------------------------------
    ("pairwise", "default", '{"reasoning": "sharper", "decision": "A"}', X, "json"),
    ("pairwise", "default", '```json\n{"decision": "B"}\n```', Y, "json"),
    ("pairwise", "default", 'Here is my verdict:\n{"decision": "TIE"}\nLet me know if you need more.', TIE, "json"),
    (
        "pairwise",
        "default",
        '{"reasoning": "Joke A sets up the pun.\nJoke B is flat.", "decision": "A"}',
        X,
        "json_repaired",
    ),
    ("pairwise", "default", '{"reasoning": "tabs\there", "decision": "B",}', Y, "json_repaired"),
    (
        "pairwise",
        "default",
        '```json\n{\n  "decision": "B",\n  "reasoning": "line one\nline two"\n}\n```',
        Y,
        "json_repaired",
    ),
    (
        "pairwise",
        "default",
        '{"reasoning": "The first joke relies on a pun that", "decision": "A", "humor_mechanisms": ["word',
        UNPARSEABLE,
        "cut off",
    ),
    ("pairwise", "default", '```json\n{"reasoning": "Both are', UNPARSEABLE, "cut off"),
    ("pairwise", "default", '{"decision": "A"} and on second thought {"decision": "B"}', UNPARSEABLE, "2 different"),
    ("pairwise", "default", "{'decision': 'A'}", UNPARSEABLE, "not valid JSON"),
    ("pairwise", "default", '{"reasoning": "A is better than B"}', UNPARSEABLE, "no decision"),
    # -- pairwise: free text that means one thing ---------------------------------------------------
    ("pairwise", "default", "B", Y, "text_pattern:whole_answer"),
    ("pairwise", "default", "A.", X, "text_pattern:whole_answer"),
    ("pairwise", "default", "Option A", X, "text_pattern:whole_answer"),
    ("pairwise", "default", "**B**", Y, "text_pattern:whole_answer"),
    ("pairwise", "default", "Answer: A", X, "text_pattern:labelled"),
    ("pairwise", "default", "**Answer:** B", Y, "text_pattern:labelled"),
    ("pairwise", "default", "Joke A uses a pun, joke B a reversal.\n\nFinal answer: B", Y, "text_pattern:labelled"),
    (
        "pairwise",
        "default",
        "After weighing both, the winner is **Joke B** because it surprises.",
        Y,
        "text_pattern:labelled",
    ),
    ("pairwise", "default", "I would choose A.", X, "text_pattern:chosen"),
    ("pairwise", "default", "The answer is a tie.", TIE, "text_pattern:labelled"),
    ("pairwise", "default", "Verdict: a draw", TIE, "text_pattern:labelled"),
    ("pairwise", "default", "It's a tie.", TIE, "text_pattern:tie"),
    ("pairwise", "default", "They are equally funny.", TIE, "text_pattern:tie"),
    ("pairwise", "default", "tie", TIE, "text_pattern:whole_answer"),
    ("pairwise", "no_tie", "Verdict: a draw", UNPARSEABLE, "tie"),
    # -- pairwise: the article "a", prose, hedges, refusals ------------------------------------------
    ("pairwise", "default", "A joke about cats is always funnier.", UNPARSEABLE, "no decision"),
    ("pairwise", "default", "Answer: a tie would be unfair, both are weak", UNPARSEABLE, "no decision"),
    ("pairwise", "default", "Joke A is funnier than joke B.", UNPARSEABLE, "no decision"),
    ("pairwise", "default", "Both jokes are fine.", UNPARSEABLE, "no decision"),
    ("pairwise", "default", "maybe A or B", UNPARSEABLE, "hedges"),
    ("pairwise", "default", "A, or possibly B", UNPARSEABLE, "hedges"),
    ("pairwise", "default", "Answer: A (though B is perhaps sharper)", UNPARSEABLE, "hedges"),
    (
        "pairwise",
        "default",
        "Honestly, both have their charms; it depends on the audience.",
        UNPARSEABLE,
        "no decision",
    ),
    ("pairwise", "default", "Decision: A. Actually, decision: B", UNPARSEABLE, "conflicting"),
    ("pairwise", "default", "I can't judge this; humor is subjective.", UNPARSEABLE, "refuses"),
    ("pairwise", "default", "As an AI language model, I don't have personal preferences.", UNPARSEABLE, "refuses"),
    ("pairwise", "default", "I'm sorry, but I cannot compare these jokes.", UNPARSEABLE, "refuses"),
    # -- pairwise in Chinese (Chumor) and Japanese ---------------------------------------------------
    ("pairwise", "chumor_preference", "答案：A", X, "text_pattern:labelled"),
    ("pairwise", "chumor_preference", "我选B。解释2更准确地指出了谐音。", Y, "text_pattern:chosen"),
    ("pairwise", "chumor_preference", "平局", TIE, "text_pattern:whole_answer"),
    ("pairwise", "chumor_preference", "结论：平局", TIE, "text_pattern:labelled"),
    ("pairwise", "chumor_preference", "A或B都可以", UNPARSEABLE, "hedges"),
    ("pairwise", "chumor_preference", "作为AI，我无法判断哪个解释更好。", UNPARSEABLE, "refuses"),
    ("pairwise", "chumor_preference", "两个解释都提到了谐音，但是第一个更完整。", UNPARSEABLE, "no decision"),
    ("pairwise", "default", "引き分け", TIE, "text_pattern:whole_answer"),
    ("pairwise", "default", "回答：B", Y, "text_pattern:labelled"),
    ("pairwise", "default", "Aの方が面白いです。", X, "text_pattern:chosen"),
    ("pairwise", "default", "AかBか、判断できません。", UNPARSEABLE, "refuses"),
    # -- binary: negations are read as negations ----------------------------------------------------
    ("binary", "default", '{"label": "not_funny"}', NOT_FUNNY, "json"),
    ("binary", "default", '{"reasoning": "Flat.\nNo twist.", "label": "not_funny"}', NOT_FUNNY, "json_repaired"),
    ("binary", "default", "Funny", FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "Not funny.", NOT_FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "Yes", FUNNY, "text_pattern:yes_no"),
    ("binary", "default", "Label: not funny", NOT_FUNNY, "text_pattern:labelled"),
    ("binary", "default", "It isn't funny.", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "It's not very funny.", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "The joke has 3 puns and it is not funny", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "This one is not funny at all.", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "It's not not funny.", UNPARSEABLE, "negates"),
    ("binary", "default", "Some find it funny, others not funny.", UNPARSEABLE, "conflicting"),
    ("binary", "default", "Is it funny? No.", UNPARSEABLE, "several sentences"),
    ("binary", "default", "It might be funny to some people, probably not funny to most.", UNPARSEABLE, "hedges"),
    ("binary", "default", "This is hilarious", UNPARSEABLE, "no label"),
    ("binary", "default", "I would rather not say.", UNPARSEABLE, "refuses"),
    # Chinese (Chumor) and Japanese (Oogiri) labels for funny / not funny.
    ("binary", "default", "不好笑", NOT_FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "这个笑话一点也不好笑。", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "不是很好笑", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "好笑", FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "不是不好笑", UNPARSEABLE, "negates"),
    ("binary", "default", "面白くない", NOT_FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "面白い！", FUNNY, "text_pattern:whole_answer"),
    ("binary", "default", "この回答は笑えません。", NOT_FUNNY, "text_pattern:negation_aware_label"),
    ("binary", "default", "面白いかもしれない", UNPARSEABLE, "hedges"),
    ("binary", "default", "作为一个人工智能，我无法判断幽默。", UNPARSEABLE, "refuses"),
    ("binary", "default", "AIとして、面白さは判断できません。", UNPARSEABLE, "refuses"),
    # Chumor's explanation study: good / bad.
    ("binary", "chumor_explanation", '{"label": "good"}', {"label": "good"}, "json"),
    ("binary", "chumor_explanation", "Does not fully explain", {"label": "bad"}, "text_pattern:whole_answer"),
    (
        "binary",
        "chumor_explanation",
        "The explanation does not fully explain the pun.",
        {"label": "bad"},
        "text_pattern:negation_aware_label",
    ),
    (
        "binary",
        "chumor_explanation",
        "Step 1: the joke plays on 鸡 and 机.\nStep 2: the explanation mentions only the chicken.\n"
        "So it does not fully explain the joke.",
        UNPARSEABLE,
        "several sentences",
    ),
    # -- ordinal: digits that are the answer, never counts ------------------------------------------
    ("ordinal", "default", '{"rating": 3}', {"rating": 3}, "json"),
    ("ordinal", "default", '{"rating": 2,}', {"rating": 2}, "json_repaired"),
    ("ordinal", "default", "2", {"rating": 2}, "text_pattern:whole_answer"),
    ("ordinal", "default", "**1**", {"rating": 1}, "text_pattern:whole_answer"),
    ("ordinal", "default", "2/3", {"rating": 2}, "text_pattern:whole_answer"),
    ("ordinal", "default", "Rating: 2", {"rating": 2}, "text_pattern:labelled"),
    ("ordinal", "default", "Rating: 2/3. The pun has 3 layers.", {"rating": 2}, "text_pattern:labelled"),
    ("ordinal", "default", "The wordplay is clever.\n\nScore: 3", {"rating": 3}, "text_pattern:labelled"),
    ("ordinal", "default", "评分：1", {"rating": 1}, "text_pattern:labelled"),
    ("ordinal", "default", "2分", {"rating": 2}, "text_pattern:whole_answer"),
    ("ordinal", "default", "評価：0点", {"rating": 0}, "text_pattern:labelled"),
    ("ordinal", "default", "The joke has 3 puns and it is not funny", UNPARSEABLE, "no rating"),
    ("ordinal", "default", "I would say 2 out of 3", UNPARSEABLE, "no rating"),
    ("ordinal", "default", "2/5", UNPARSEABLE, "not on this scale"),
    ("ordinal", "default", "2 or 3", UNPARSEABLE, "hedges"),
    ("ordinal", "default", "Maybe a 2.", UNPARSEABLE, "hedges"),
    ("ordinal", "default", "Rating: 2. Actually, rating: 3", UNPARSEABLE, "conflicting"),
    ("ordinal", "default", "Rating: 2.5", UNPARSEABLE, "no rating"),
    ("ordinal", "default", "7", UNPARSEABLE, "outside the scale"),
    ("ordinal", "default", '{"rating": 2.5}', UNPARSEABLE, "whole number"),
    ("ordinal", "default", "作为AI，我无法给笑话打分。", UNPARSEABLE, "refuses"),
    # -- pick one of three (Oogiri) ---------------------------------------------------------------
    ("pick_one", "default", '{"choice": 3}', {"choice": "opt-3"}, "json"),
    ("pick_one", "default", "2", {"choice": "opt-2"}, "text_pattern:whole_answer"),
    ("pick_one", "default", "Option 2", {"choice": "opt-2"}, "text_pattern:whole_answer"),
    ("pick_one", "default", "Answer: 1", {"choice": "opt-1"}, "text_pattern:labelled"),
    ("pick_one", "default", "答え：3番", {"choice": "opt-3"}, "text_pattern:labelled"),
    ("pick_one", "default", "回答：3番", {"choice": "opt-3"}, "text_pattern:labelled"),
    ("pick_one", "default", "I would pick option 3.", {"choice": "opt-3"}, "text_pattern:chosen"),
    ("pick_one", "default", "All 3 answers are puns, but the second is the sharpest.", UNPARSEABLE, "no choice"),
    ("pick_one", "default", "Option 2, or possibly 3", UNPARSEABLE, "hedges"),
    ("pick_one", "default", "どれも面白いので選べません。", UNPARSEABLE, "no choice"),
    # -- best-worst -------------------------------------------------------------------------------
    ("best_worst", "default", '{"best": 3, "worst": "1"}', {"best": "k-y", "worst": "k-w"}, "json"),
    ("best_worst", "default", "Best: joke 2\nWorst: joke 4", {"best": "k-x", "worst": "k-z"}, "text_pattern:labelled"),
    ("best_worst", "default", "Best: joke 2", UNPARSEABLE, "no worst joke"),
    ("best_worst", "default", "Best: 2 or 3\nWorst: 4", UNPARSEABLE, "hedges"),
    # -- written explanations: prose is the answer, refusals are not ----------------------------
    (
        "explanation",
        "default",
        "The joke works because 'bank' can mean a river bank or a place for money.",
        {"text": "The joke works because 'bank' can mean a river bank or a place for money."},
        "text_pattern:whole_answer",
    ),
    (
        "explanation",
        "default",
        "Perhaps the pun is on 鸡 (chicken) and 机 (machine), which sound alike.",
        {"text": "Perhaps the pun is on 鸡 (chicken) and 机 (machine), which sound alike."},
        "text_pattern:whole_answer",
    ),
    (
        "explanation",
        "default",
        '{"text": "It plays on two meanings\nof one word."}',
        {"text": "It plays on two meanings\nof one word."},
        "json_repaired",
    ),
    ("explanation", "default", "I'm sorry, but I can't explain this joke.", UNPARSEABLE, "refuses"),
    (
        "explanation",
        "default",
        'The husband keeps saying "I can\'t hear you" while the wife whispers; he only hears what he wants to.',
        {
            "text": 'The husband keeps saying "I can\'t hear you" while the wife whispers; '
            "he only hears what he wants to."
        },
        "text_pattern:whole_answer",
    ),
    ("pairwise", "default", 'Joke B\'s punchline "maybe A or B" is the twist.\nAnswer: B', Y, "text_pattern:labelled"),
    ("explanation", "default", '{"text": "The pun is on', UNPARSEABLE, "cut off"),
]
