"""Put first on the path by tests/conftest.py when no selected test is marked ``model`` (`make test-fast`): a
test that loads the real MiniLM model there, in process or through a command it starts, fails here."""

import os

raise ImportError(f"{os.environ.get('PYTEST_CURRENT_TEST', 'a test').rsplit(' (', 1)[0]}: loads the real "
                  "MiniLM model (imports sentence_transformers) but is not marked model; mark it "
                  "@pytest.mark.model (tests/conftest.py marks what it can see)")
