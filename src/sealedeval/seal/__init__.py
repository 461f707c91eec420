"""The seal: rubric.lock (hash set), its git binding, external anchors, and the audit."""
