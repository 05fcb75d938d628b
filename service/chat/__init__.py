"""Chat front-ends: Slack and Feishu/Lark bots that answer pasted log lines in the thread.

The platform-neutral parts (reading a chat message, choosing a language, explaining and ordering
the lines, rate limiting, remembering answers and feedback) are shared; ``slack`` and ``feishu``
only translate between a platform's events and those parts, and ``blocks`` / ``cards`` render
the same answers as Block Kit and as Feishu interactive cards.
"""
