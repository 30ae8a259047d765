# Verifies a service-account token (argv[1], a file) against a JWKS (argv[2],
# a file) with the `cryptography` module, as an OIDC relying party would:
# the key is picked by the header's kid. Prints "verified <alg>" or fails.
import base64
import json
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils


def b64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def num(s):
    return int.from_bytes(b64(s), "big")


token = open(sys.argv[1]).read().strip()
keys = json.load(open(sys.argv[2]))["keys"]
head, payload, sig = token.split(".")
header = json.loads(b64(head))
key = next(k for k in keys if k["kid"] == header["kid"])
signed = (head + "." + payload).encode()
raw = b64(sig)
if key["kty"] == "EC":
    pub = ec.EllipticCurvePublicNumbers(num(key["x"]), num(key["y"]), ec.SECP256R1()).public_key()
    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    pub.verify(der, signed, ec.ECDSA(hashes.SHA256()))
else:
    pub = rsa.RSAPublicNumbers(num(key["e"]), num(key["n"])).public_key()
    pub.verify(raw, signed, padding.PKCS1v15(), hashes.SHA256())
print("verified", header["alg"])
