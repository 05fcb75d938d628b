"""explainlog indexer: load and validate the KB, normalize lines, embed them, build the index.

Nothing here imports ``service``; the data path is kb/ -> indexer -> index artifact -> service.
"""
