"""Archive: bundle results with checksums, CITATION.cff, and deposit to Zenodo or Figshare."""
