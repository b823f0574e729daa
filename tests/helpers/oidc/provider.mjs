// The authorization server of the authorization tests: oidc-provider (a certified OpenID provider)
// on a free loopback port, issuing JWT access tokens for one protected resource (RFC 8707 resource
// indicators) with the scopes read, write and send.
//
// Usage: node provider.mjs CONFIG.json. The config holds `resourcePrefix` (every resource URL
// starting with it is a protected resource: the tests run several deskmcp apps, one per port),
// `jwks` (the private signing keys, so the tests can also sign tokens with the provider's own keys)
// and `clients` (registered clients; more register dynamically). Prints one line
// `{"issuer": "http://127.0.0.1:PORT"}` on stdout once it listens.
//
// Sign-in and consent have no pages: the tests drive them over HTTP.
//   GET  /interaction/UID          -> {"uid", "prompt", "scope", "resource"}
//   POST /interaction/UID/login    (form: login=ACCOUNT)  -> redirect back into the flow
//   POST /interaction/UID/consent  (form: deny=1 to refuse) -> grants what the client asked for
// A client whose id starts with "opaque-" gets opaque access tokens (checked by introspection).
import { readFileSync } from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const resourceScopes = 'read write send';

function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

function sendJson(res, status, payload) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: config.clients,
    jwks: config.jwks,
    // read, write and send are the resource's scopes; listed here too so that dynamically registered
    // clients may ask for them (registration checks a client's scope against this list).
    scopes: ['openid', 'offline_access', 'read', 'write', 'send'],
    cookies: { keys: ['deskmcp-tests-cookie-key'] },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator, client) => {
          if (!indicator.startsWith(config.resourcePrefix)) {
            throw new Provider.errors.InvalidTarget(`unknown resource ${indicator}`);
          }
          const opaque = client.clientId.startsWith('opaque-');
          return {
            audience: indicator,
            scope: resourceScopes,
            accessTokenTTL: 600,
            accessTokenFormat: opaque ? 'opaque' : 'jwt',
            ...(opaque ? {} : { jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
    },
  });
  provider.proxy = false;
  const handle = provider.callback();

  server.on('request', async (req, res) => {
    const match = req.url.match(/^\/interaction\/([^/?]+)(\/(login|consent))?/);
    if (!match) {
      handle(req, res);
      return;
    }
    try {
      const details = await provider.interactionDetails(req, res);
      const step = match[3];
      if (!step && req.method === 'GET') {
        sendJson(res, 200, {
          uid: details.uid,
          prompt: details.prompt.name,
          scope: details.params.scope || '',
          resource: details.params.resource || null,
        });
        return;
      }
      const form = await readForm(req);
      if (step === 'login') {
        const login = form.get('login');
        const result = login ? { login: { accountId: login } } : { error: 'access_denied' };
        await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
        return;
      }
      if (form.get('deny')) {
        await provider.interactionFinished(req, res, { error: 'access_denied' }, { mergeWithLastSubmission: true });
        return;
      }
      const { accountId } = details.session;
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    } catch (err) {
      sendJson(res, 400, { error: err.name, message: err.message });
    }
  });

  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
