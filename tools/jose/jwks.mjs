#!/usr/bin/env node
// jwks.mjs: verifies gatemesh JWT tickets with the npm jose library the way a JOSE
// consumer would, from a JWK Set (createLocalJWKSet) and from a plain SPKI PEM (importSPKI).
// The Rust tests call it against what the server serves and what `gatemesh keygen` writes.
//
// Usage: node tools/jose/jwks.mjs < request.json   (needs `npm ci` in tools/jose)
//
// stdin: {"jwks": {...}?, "spki_pem": "..."?, "tokens": ["..."], "at": "RFC3339"?}
// stdout: one line of JSON, exit 0 unless the request itself is bad (exit 2):
//   {"thumbprints": ["..."],            RFC 7638 thumbprint of each JWKS key
//    "jwks": [{"valid": true, "kid": "...", "tid": "..."} | {"valid": false, "error": "..."}],
//    "spki": [ same, verified with the PEM key ]}

import { calculateJwkThumbprint, createLocalJWKSet, importSPKI, jwtVerify } from 'jose';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function verifyAll(tokens, key, currentDate) {
  const out = [];
  for (const token of tokens) {
    try {
      const { payload, protectedHeader } = await jwtVerify(token, key, {
        algorithms: ['ES256'],
        currentDate,
      });
      out.push({ valid: true, kid: protectedHeader.kid ?? null, tid: payload.tid });
    } catch (e) {
      out.push({ valid: false, error: e.code ?? e.message });
    }
  }
  return out;
}

async function main() {
  let req;
  try {
    req = JSON.parse(await readStdin());
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: `stdin is not JSON: ${e.message}` })}\n`);
    process.exitCode = 2;
    return;
  }
  const currentDate = req.at ? new Date(req.at) : undefined;
  const result = {};
  if (req.jwks) {
    result.thumbprints = [];
    for (const jwk of req.jwks.keys) result.thumbprints.push(await calculateJwkThumbprint(jwk));
    result.jwks = await verifyAll(req.tokens, createLocalJWKSet(req.jwks), currentDate);
  }
  if (req.spki_pem != null) {
    // No cleaning: the text goes to importSPKI exactly as it was written.
    const key = await importSPKI(req.spki_pem, 'ES256');
    result.spki = await verifyAll(req.tokens, key, currentDate);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e) => {
  process.stdout.write(`${JSON.stringify({ error: `${e.code ?? e.name}: ${e.message}` })}\n`);
  process.exitCode = 2;
});
