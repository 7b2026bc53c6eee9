"""The four SmartVector retrieval signals as pure, vectorised functions."""
