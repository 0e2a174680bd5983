//! Issuing and verifying access tokens: EdDSA (Ed25519) JWTs with a `kid`
//! header, so keys can rotate (verifiers accept several keys at once).

use std::{collections::HashMap, fmt, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use jsonwebtoken::{
    Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind,
    get_current_timestamp,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{AuthError, Caller, Role};

/// Clock skew tolerated between the issuing and the verifying machine. Small:
/// access tokens live minutes, so a large leeway would extend them noticeably.
const LEEWAY_SECONDS: u64 = 30;

/// An Ed25519 key pair with its key id (`kid`), used by accounts to sign
/// access tokens.
pub struct SigningKey {
    kid: String,
    key: ed25519_dalek::SigningKey,
}

impl SigningKey {
    /// A fresh random key with a random `kid` (`dev-…`), for development and
    /// tests: tokens signed with it stop verifying when the process restarts.
    pub fn generate() -> SigningKey {
        let mut rng = rand::rng();
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let mut id = [0u8; 8];
        rng.fill_bytes(&mut id);
        let kid = id.iter().fold(String::from("dev-"), |mut kid, byte| {
            kid.push_str(&format!("{byte:02x}"));
            kid
        });
        SigningKey {
            kid,
            key: ed25519_dalek::SigningKey::from_bytes(&seed),
        }
    }

    /// A configured key: `private_pem` is a PKCS#8 PEM Ed25519 private key
    /// (`-----BEGIN PRIVATE KEY-----`, as written by
    /// `openssl genpkey -algorithm ed25519`).
    pub fn from_pem(kid: &str, private_pem: &str) -> Result<SigningKey, AuthError> {
        check_kid(kid)?;
        let key = ed25519_dalek::SigningKey::from_pkcs8_pem(private_pem).map_err(|err| {
            AuthError::Key(format!(
                "signing key {kid:?} is not an Ed25519 private key in PKCS#8 PEM \
                 (`openssl genpkey -algorithm ed25519`): {err}"
            ))
        })?;
        Ok(SigningKey {
            kid: kid.to_owned(),
            key,
        })
    }

    /// The private key as PKCS#8 PEM, to hand to a tool that signs with it (an operator
    /// key for `basra admin token`). Keep it out of logs and off shared disks.
    pub fn private_pem(&self) -> String {
        self.key
            .to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .expect("an Ed25519 private key always encodes as PKCS#8 PEM")
            .to_string()
    }

    /// The key id written into each token's header.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`): what the
    /// other services are configured with to verify tokens.
    pub fn public_pem(&self) -> String {
        self.key
            .verifying_key()
            .to_public_key_pem(Default::default())
            .expect("an Ed25519 public key always encodes as PEM")
    }
}

// The private key never appears in logs.
impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// An access token and when it stops being accepted.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The JWT, sent by clients as `authorization: Bearer <token>`.
    pub token: String,
    /// The token's `exp`.
    pub expires_at: DateTime<Utc>,
}

/// The claims accounts writes. `sub`, `role` and `guest` make the [`Caller`];
/// `jti` makes every token unique (and traceable in logs). An operator's token also
/// names the operator (`name`), for the audit.
#[derive(Serialize)]
struct IssuedClaims<'a> {
    sub: Uuid,
    role: Role,
    guest: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    iss: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: Uuid,
}

/// The claims a verifier reads (iss, aud and exp are checked by jsonwebtoken).
#[derive(Deserialize)]
struct VerifiedClaims {
    sub: Uuid,
    role: Role,
    guest: bool,
    #[serde(default)]
    name: Option<String>,
}

/// The longest operator name a token may carry.
pub const MAX_OPERATOR_NAME_CHARS: usize = 64;

/// Whether `name` may name an operator in a token: 1..=64 characters, no control
/// characters, not only spaces.
pub fn valid_operator_name(name: &str) -> bool {
    !name.trim().is_empty()
        && name.chars().count() <= MAX_OPERATOR_NAME_CHARS
        && !name.chars().any(char::is_control)
}

/// What a verified token says: the caller, and an operator's name when it gives one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Who calls.
    pub caller: Caller,
    /// The operator's name (`name` claim; operator tokens only).
    pub operator_name: Option<String>,
}

/// Issues access tokens: EdDSA JWTs with a `kid` header and the claims `sub`
/// (user id), `role`, `guest`, `iss`, `aud`, `iat`, `exp` and `jti`.
#[derive(Clone)]
pub struct TokenIssuer {
    kid: String,
    public_pem: String,
    public_bytes: [u8; 32],
    encoding: EncodingKey,
    decoding: DecodingKey,
    issuer: String,
    audience: String,
}

impl TokenIssuer {
    /// An issuer signing with `key`, writing `iss` = `issuer` and `aud` =
    /// `audience`.
    pub fn new(key: SigningKey, issuer: &str, audience: &str) -> TokenIssuer {
        let der = key
            .key
            .to_pkcs8_der()
            .expect("an Ed25519 private key always encodes as PKCS#8");
        TokenIssuer {
            encoding: EncodingKey::from_ed_der(der.as_bytes()),
            decoding: DecodingKey::from_ed_der(key.key.verifying_key().as_bytes()),
            public_pem: key.public_pem(),
            public_bytes: key.key.verifying_key().to_bytes(),
            kid: key.kid,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
        }
    }

    /// A token saying who `caller` is, valid for `ttl` from now.
    pub fn issue(&self, caller: &Caller, ttl: Duration) -> Result<IssuedToken, AuthError> {
        self.issue_named(caller, None, ttl)
    }

    /// [`issue`](Self::issue), an operator's token naming the operator (`name`, which
    /// must pass [`valid_operator_name`]).
    pub fn issue_named(
        &self,
        caller: &Caller,
        name: Option<&str>,
        ttl: Duration,
    ) -> Result<IssuedToken, AuthError> {
        if let Some(name) = name
            && (caller.role != Role::Operator || !valid_operator_name(name))
        {
            return Err(AuthError::Key(format!(
                "an operator's name is 1..{MAX_OPERATOR_NAME_CHARS} printable characters, \
                 in operator tokens only (not {name:?} in a {} token)",
                caller.role
            )));
        }
        // jsonwebtoken's own clock, so that issuing and checking agree.
        let iat = get_current_timestamp();
        let exp = iat.saturating_add(ttl.as_secs());
        let claims = IssuedClaims {
            sub: caller.user_id,
            role: caller.role,
            guest: caller.guest,
            name,
            iss: &self.issuer,
            aud: &self.audience,
            iat,
            exp,
            jti: Uuid::now_v7(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        let token = jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|err| AuthError::Key(format!("cannot sign a token: {err}")))?;
        let expires_at = i64::try_from(exp)
            .ok()
            .and_then(|exp| DateTime::from_timestamp(exp, 0))
            .ok_or_else(|| AuthError::Key(format!("token lifetime {ttl:?} is out of range")))?;
        Ok(IssuedToken { token, expires_at })
    }

    /// The key id of the signing key.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The signing key's public key as SPKI PEM (see
    /// [`SigningKey::public_pem`]).
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }

    /// A verifier accepting this issuer's tokens (same key, issuer and audience) of any
    /// role: for tests and one-key tools. A service binds its key to roles with
    /// [`TokenIssuer::verifier_for`].
    pub fn verifier(&self) -> TokenVerifier {
        self.verifier_with(None)
    }

    /// A verifier accepting this issuer's tokens of `roles` only: accounts trusts its own
    /// key for `player` tokens, and any other role only where it lists the same key in
    /// [`TokenVerifier::and_trusting`] (as `basra dev`'s one development key does).
    pub fn verifier_for(&self, roles: &[Role]) -> TokenVerifier {
        self.verifier_with(Some(roles.to_vec()))
    }

    fn verifier_with(&self, roles: Option<Vec<Role>>) -> TokenVerifier {
        TokenVerifier::from_keys(
            HashMap::from([(
                self.kid.clone(),
                VerificationKey {
                    key: self.decoding.clone(),
                    public: self.public_bytes,
                    roles,
                },
            )]),
            &self.issuer,
            &self.audience,
        )
    }
}

impl fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("kid", &self.kid)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// Verifies access tokens: only EdDSA, the `kid` must name a known key, `iss`
/// and `aud` must match, `exp` must not be past and `nbf`, when present, not ahead
/// (30 s leeway both), and the role must be one the key may sign. Cheap to clone (the
/// keys are shared).
#[derive(Clone)]
pub struct TokenVerifier {
    inner: Arc<VerifierInner>,
}

struct VerifierInner {
    keys: HashMap<String, VerificationKey>,
    validation: Validation,
}

/// A verification key and the roles it may sign (`None`: any role).
#[derive(Clone)]
struct VerificationKey {
    key: DecodingKey,
    /// The Ed25519 public key, to tell the same key listed again from another.
    public: [u8; 32],
    roles: Option<Vec<Role>>,
}

/// A public key a verifier trusts, by its `kid`, for tokens of the given roles only: a
/// service's own key signs `service` tokens, accounts' key `player` tokens, an operator
/// key `operator` tokens. A token whose role its key may not sign is rejected.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    /// The key id.
    pub kid: String,
    /// The Ed25519 public key, SPKI PEM.
    pub public_pem: String,
    /// The roles tokens signed with it may carry.
    pub roles: Vec<Role>,
}

impl TokenVerifier {
    /// A verifier accepting tokens signed by any of `keys` (`(kid, SPKI PEM
    /// public key)`; several during a key rotation) with this issuer and
    /// audience.
    pub fn new(
        keys: Vec<(String, String)>,
        issuer: &str,
        audience: &str,
    ) -> Result<TokenVerifier, AuthError> {
        if keys.is_empty() {
            return Err(AuthError::Key(
                "no token verification keys are configured".into(),
            ));
        }
        let mut decoding = HashMap::with_capacity(keys.len());
        for (kid, pem) in keys {
            add_key(&mut decoding, kid, &pem, None)?;
        }
        Ok(TokenVerifier::from_keys(decoding, issuer, audience))
    }

    /// A verifier accepting tokens signed by any of `keys`, each for its roles only, with
    /// this issuer and audience. Rotating a key: add the new kid, then remove the old one.
    pub fn trusting(
        keys: Vec<TrustedKey>,
        issuer: &str,
        audience: &str,
    ) -> Result<TokenVerifier, AuthError> {
        let verifier = TokenVerifier::from_keys(HashMap::new(), issuer, audience);
        let verifier = verifier.and_trusting(keys)?;
        if verifier.inner.keys.is_empty() {
            return Err(AuthError::Key(
                "no token verification keys are configured".into(),
            ));
        }
        Ok(verifier)
    }

    /// This verifier, also accepting tokens signed by `keys` (each for its roles). A kid
    /// already trusted may be listed again with the same public key, for more roles; with
    /// another key it is refused.
    pub fn and_trusting(&self, keys: Vec<TrustedKey>) -> Result<TokenVerifier, AuthError> {
        let mut all = self.inner.keys.clone();
        for key in keys {
            add_key(&mut all, key.kid, &key.public_pem, Some(key.roles))?;
        }
        Ok(TokenVerifier {
            inner: Arc::new(VerifierInner {
                keys: all,
                validation: self.inner.validation.clone(),
            }),
        })
    }

    /// This verifier with another clock-skew allowance on `exp` (30 s by default).
    pub fn with_leeway(&self, leeway: Duration) -> TokenVerifier {
        let mut validation = self.inner.validation.clone();
        validation.leeway = leeway.as_secs();
        TokenVerifier {
            inner: Arc::new(VerifierInner {
                keys: self.inner.keys.clone(),
                validation,
            }),
        }
    }

    /// The key ids this verifier trusts, sorted.
    pub fn kids(&self) -> Vec<String> {
        let mut kids: Vec<String> = self.inner.keys.keys().cloned().collect();
        kids.sort();
        kids
    }

    fn from_keys(keys: HashMap<String, VerificationKey>, issuer: &str, audience: &str) -> Self {
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = LEEWAY_SECONDS;
        // A token not valid yet (`nbf` ahead, past the same leeway as `exp`) is refused.
        validation.validate_nbf = true;
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        TokenVerifier {
            inner: Arc::new(VerifierInner { keys, validation }),
        }
    }

    /// Who the token says the caller is, if the token is acceptable.
    pub fn verify(&self, token: &str) -> Result<Caller, AuthError> {
        self.verify_claims(token).map(|verified| verified.caller)
    }

    /// [`verify`](Self::verify), with the operator's name an operator's token gives
    /// (a name that is not [`valid_operator_name`], or in a token of another role,
    /// makes the token invalid).
    pub fn verify_claims(&self, token: &str) -> Result<Verified, AuthError> {
        // The header is read unverified only to pick the key; the signature
        // is then checked with that key, for EdDSA alone.
        let header = jsonwebtoken::decode_header(token).map_err(|err| match err.kind() {
            // An `alg` jsonwebtoken does not know (e.g. "none") fails here.
            ErrorKind::Json(_) => AuthError::Invalid(
                "unsupported token header: only EdDSA-signed tokens are accepted".into(),
            ),
            _ => AuthError::Malformed,
        })?;
        if header.alg != Algorithm::EdDSA {
            return Err(AuthError::Invalid(format!(
                "algorithm {:?} is not accepted: only EdDSA-signed tokens are",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| AuthError::Invalid("the token header has no key id (kid)".into()))?;
        let key = self.inner.keys.get(&kid).ok_or_else(|| {
            // The kid is the caller's text: shorten it before echoing it.
            let shown: String = kid.chars().take(64).collect();
            AuthError::Invalid(format!("signed with an unknown key (kid {shown:?})"))
        })?;
        let data = jsonwebtoken::decode::<VerifiedClaims>(token, &key.key, &self.inner.validation)
            .map_err(|err| verify_error(err.into_kind()))?;
        let claims = data.claims;
        if let Some(roles) = &key.roles
            && !roles.contains(&claims.role)
        {
            return Err(AuthError::Invalid(format!(
                "the key {kid:?} may not sign {} tokens",
                claims.role
            )));
        }
        if let Some(name) = &claims.name
            && (claims.role != Role::Operator || !valid_operator_name(name))
        {
            return Err(AuthError::Invalid(format!(
                "a token's name must be 1..{MAX_OPERATOR_NAME_CHARS} printable characters, in an operator token"
            )));
        }
        Ok(Verified {
            caller: Caller {
                user_id: claims.sub,
                role: claims.role,
                guest: claims.guest,
            },
            operator_name: claims.name,
        })
    }
}

impl fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("kids", &self.kids())
            .finish_non_exhaustive()
    }
}

/// A jsonwebtoken failure in the words of [`AuthError`].
fn verify_error(kind: ErrorKind) -> AuthError {
    match kind {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => {
            AuthError::Invalid("the token is not valid yet (nbf is in the future)".into())
        }
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => AuthError::Malformed,
        ErrorKind::InvalidSignature => AuthError::Invalid("bad signature".into()),
        ErrorKind::InvalidAlgorithm => {
            AuthError::Invalid("only EdDSA-signed tokens are accepted".into())
        }
        ErrorKind::InvalidIssuer => AuthError::Invalid("issued by someone else (iss)".into()),
        ErrorKind::InvalidAudience => {
            AuthError::Invalid("issued for another audience (aud)".into())
        }
        ErrorKind::MissingRequiredClaim(claim) => {
            AuthError::Invalid(format!("the claim {claim:?} is missing"))
        }
        ErrorKind::InvalidClaimFormat(claim) => {
            AuthError::Invalid(format!("the claim {claim:?} is malformed"))
        }
        ErrorKind::Json(err) => AuthError::Invalid(format!("unexpected claims: {err}")),
        other => AuthError::Invalid(format!("{other:?}")),
    }
}

/// Adds `(kid, pem)` to `keys`, refusing a bad key or a kid listed twice, except the same
/// key listed again for more roles (it then signs the roles of both listings).
fn add_key(
    keys: &mut HashMap<String, VerificationKey>,
    kid: String,
    pem: &str,
    roles: Option<Vec<Role>>,
) -> Result<(), AuthError> {
    check_kid(&kid)?;
    let public = ed25519_dalek::VerifyingKey::from_public_key_pem(pem).map_err(|err| {
        AuthError::Key(format!(
            "verification key {kid:?} is not an Ed25519 public key in SPKI PEM \
             (`-----BEGIN PUBLIC KEY-----`): {err}"
        ))
    })?;
    match keys.get_mut(&kid) {
        Some(VerificationKey {
            public: known_public,
            roles: Some(known_roles),
            ..
        }) if *known_public == public.to_bytes() && roles.is_some() => {
            for role in roles.into_iter().flatten() {
                if !known_roles.contains(&role) {
                    known_roles.push(role);
                }
            }
            Ok(())
        }
        Some(_) => Err(AuthError::Key(format!(
            "verification key id {kid:?} is listed twice (the same key may be listed \
             again only for more roles)"
        ))),
        None => {
            keys.insert(
                kid,
                VerificationKey {
                    key: DecodingKey::from_ed_der(public.as_bytes()),
                    public: public.to_bytes(),
                    roles,
                },
            );
            Ok(())
        }
    }
}

fn check_kid(kid: &str) -> Result<(), AuthError> {
    if kid.is_empty() || kid.len() > 64 || !kid.chars().all(|c| c.is_ascii_graphic()) {
        return Err(AuthError::Key(format!(
            "key id {kid:?} must be 1 to 64 printable ASCII characters"
        )));
    }
    Ok(())
}
