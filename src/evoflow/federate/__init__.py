"""Fed-SE on a real Flower federation: a ``ServerApp`` and ``ClientApp``
around the workflow's own explore → buffer → train and server steps
(``evoflow federate``). Only adapter tensors and counts cross the wire."""
