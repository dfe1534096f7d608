"""Scoring rules of the bundled benchmarks, in one tested place.

Task folders only wire these into ``process_results`` and aggregations; a user's own task can
import them too. Every function is deterministic (no random fallbacks, no module state), so a
task scores the same however often, and beside whatever other tasks, it runs in one process.

* :mod:`~lmms_eval.scoring.choice`: option letters from free text (ranked rules, never a guess),
  leading-letter and first-character rules, macro means (AI2D, ScienceQA, SEED-Bench, MMStar,
  RealWorldQA).
* :mod:`~lmms_eval.scoring.mmmu`: MMMU's multiple-choice and open-answer parsing, disciplines.
* :mod:`~lmms_eval.scoring.circular`: MMBench answer extraction and CircularEval.
* :mod:`~lmms_eval.scoring.vqa`: the VQA answer normaliser and 10-annotator soft accuracy.
* :mod:`~lmms_eval.scoring.text`: ChartQA relaxed accuracy, OCRBench matching, ANLS.
* :mod:`~lmms_eval.scoring.yesno`: yes/no rules and the MME, POPE and HallusionBench aggregations.
* :mod:`~lmms_eval.scoring.mathvista`: MathVista prompts, answer extraction and normalisation.
* :mod:`~lmms_eval.scoring.caption`: BLEU-1..4, METEOR, ROUGE-L and CIDEr-D for captions.
"""
