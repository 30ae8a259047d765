#!/usr/bin/env python3
"""Turns kube's generated Pod Security testdata into one JSON line per case.

Usage: tools/psa_fixtures.py <pod-security-admission>/test/testdata > /tmp/psa.jsonl
       VKUBE_PSA_FIXTURES=/tmp/psa.jsonl build/tests/vkube_unit_tests "[pod-security-testdata]"

The testdata lives in kubernetes/kubernetes staging/src/k8s.io/pod-security-admission/test/testdata
(or the kubernetes/pod-security-admission mirror): <level>/v1.<x>/{pass,fail}/<case>.yaml.
Nothing of it is copied into vkube; this only reads a checkout the user points at.
"""
import json
import os
import sys

import yaml


def main(root):
    for level in sorted(os.listdir(root)):
        level_dir = os.path.join(root, level)
        if not os.path.isdir(level_dir):
            continue
        versions = sorted(os.listdir(level_dir), key=lambda v: int(v.split(".")[1]))
        for version in versions:
            for expect in ("pass", "fail"):
                d = os.path.join(level_dir, version, expect)
                if not os.path.isdir(d):
                    continue
                for f in sorted(os.listdir(d)):
                    with open(os.path.join(d, f)) as fh:
                        pod = yaml.safe_load(fh)
                    print(json.dumps({"level": level, "version": version, "expect": expect,
                                      "file": f, "pod": pod}))


if __name__ == "__main__":
    main(sys.argv[1])
