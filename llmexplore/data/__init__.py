"""Third-party data: the catalog of fetchable datasets, their download, and the files shipped in the package.

``catalog`` pins every fetchable file (upstream commit, sha256); ``fetch`` downloads and
verifies them; ``commands`` adds ``llmexplore data list|fetch``; ``packaged/`` holds the small
published tables that ship with llmexplore (sources and licences in ``packaged/SOURCES.md``).
"""
