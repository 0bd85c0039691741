"""Multi-turn RL of a LoRA policy: settings (``config``), episodes as token
batches (``data``), advantage estimators as pure functions with one registry
(``advantages``), the KL reference (``reference``), one update (``update``),
the ScalingInter horizon schedule (``schedule``), the span trainer
(``trainer``) and a span from a job's files (``run``)."""
