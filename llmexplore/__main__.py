import sys

from llmexplore.cli import main

sys.exit(main())
