"""LTI 1.3 Advantage, the tool side: an LMS launches kernelgrade (OIDC login, signed launch),
an instructor picks an exercise (deep linking), grades go back to the LMS gradebook (AGS) and the
roster comes from it (NRPS). The protocol is pylti1p3's; service/lti/adapter.py fits it to FastAPI."""
