"""explainlog service: the explainer (regex tier, semantic tier, calibrated confidence) and its
front-ends. Depends on ``indexer``; never the other way round."""
