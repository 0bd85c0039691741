"""A read-only web explorer over the trajectory store (``evoflow explore-ui``):
filter episodes, see success by round, read an episode turn by turn and put
two methods' episodes of one task side by side. FastAPI renders plain HTML on
the server (no front-end build, no JavaScript needed): every view is a URL, so
every view is a deep link."""
