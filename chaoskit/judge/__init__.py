"""The optional rubric grader (between runner and metrics): a chat model asked a fixed, versioned rubric per episode.

The deterministic checks gate by default; the judge is shown beside them, and gates only when calibrated on a
labelled corpus to the agreement the user asks for (``--judge-min-kappa``). See docs/checks.md.
"""

from chaoskit.judge._agreement import kappa, rogan_gladen, wilson
from chaoskit.judge._ask import CACHE_ENV, Judge, Judgment, default_cache_dir
from chaoskit.judge._beside_checks import ANSWER_CHECKS, entry, judge_line, judge_rows, summary_of
from chaoskit.judge._calibrate import ANY, CALIBRATION_KIND, calibrate, check_calibration, corrected_pass_rate
from chaoskit.judge._corpus import Answer, Corpus, CorpusError, Situation, load_corpus
from chaoskit.judge._corpus_replay import replay_situation as replay
from chaoskit.judge._input import judge_input
from chaoskit.judge._judge_models import JudgeModel, ModelRefused, OpenAIEndpoint, Reply, load_model
from chaoskit.judge._rubric import LABELS, RUBRIC_VERSION, SYSTEM_PROMPT

__all__ = [
    "ANSWER_CHECKS",
    "ANY",
    "CACHE_ENV",
    "CALIBRATION_KIND",
    "LABELS",
    "RUBRIC_VERSION",
    "SYSTEM_PROMPT",
    "Answer",
    "Corpus",
    "CorpusError",
    "Judge",
    "JudgeModel",
    "Judgment",
    "ModelRefused",
    "OpenAIEndpoint",
    "Reply",
    "Situation",
    "calibrate",
    "check_calibration",
    "corrected_pass_rate",
    "default_cache_dir",
    "entry",
    "judge_input",
    "judge_line",
    "judge_rows",
    "kappa",
    "load_corpus",
    "load_model",
    "replay",
    "rogan_gladen",
    "summary_of",
    "wilson",
]
