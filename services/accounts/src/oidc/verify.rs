//! The checks of one ID token, given the provider's key for its `kid`: pure, no I/O.
//!
//! A token is accepted only when all hold: its header says `alg: RS256` and names a key
//! id (`kid`); its signature verifies with that key; `iss` is one of the provider's
//! issuers; `aud` is one of our client ids; `exp` has not passed (60 s of clock skew
//! allowed); `sub` is 1..255 characters; and `nonce` equals the request's nonce or the
//! lowercase hex SHA-256 of it (Apple's guide has apps send Apple the hash of the nonce
//! they keep).

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{AccountsError, Result};

/// The longest ID token accepted, in bytes (real ones are about 1 KiB).
pub const MAX_ID_TOKEN_BYTES: usize = 8192;
/// The longest nonce accepted, in characters.
pub const MAX_NONCE_CHARS: usize = 256;
/// The longest subject accepted, in characters (OpenID Connect: at most 255 ASCII).
pub const MAX_SUBJECT_CHARS: usize = 255;
/// Clock skew allowed on `exp`, in seconds.
pub const LEEWAY_SECONDS: u64 = 60;

/// Why a token is refused (the client is answered UNAUTHENTICATED with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// Not three base64url parts, or a header that is not JSON.
    #[error("it is not a well-formed JWT")]
    Malformed,
    /// The header is not JSON with a known `alg` (`alg: none` is not one).
    #[error("its header is not a JWT header with a known algorithm (alg: none is refused)")]
    Header,
    /// `alg` is not RS256 (HS256, ES256, ...).
    #[error("its algorithm is not RS256")]
    Algorithm,
    /// No `kid` in the header.
    #[error("its header names no key (kid)")]
    NoKeyId,
    /// The provider publishes no key with this id.
    #[error("it is signed with a key the provider does not publish")]
    UnknownKey,
    /// The signature does not verify.
    #[error("its signature does not verify")]
    Signature,
    /// `exp` has passed.
    #[error("it has expired")]
    Expired,
    /// `iss` is not the provider's.
    #[error("it is from another issuer")]
    Issuer,
    /// `aud` names none of our client ids.
    #[error("it is for another audience (client id)")]
    Audience,
    /// `nonce` is missing or is not the request's.
    #[error("its nonce is not this request's")]
    Nonce,
    /// A required claim (exp, iss, aud, sub) is missing or malformed.
    #[error("a required claim is missing or malformed: {0}")]
    Claims(String),
}

/// What a token must say besides its signature.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// Accepted `iss` values.
    pub issuers: &'a [String],
    /// Accepted `aud` values.
    pub audiences: &'a [String],
    /// The nonce the request carries.
    pub nonce: &'a str,
}

/// The request's own checks: INVALID_ARGUMENT for an empty or too long token or nonce.
pub fn check_input(id_token: &str, nonce: &str) -> Result<()> {
    if id_token.is_empty() || id_token.len() > MAX_ID_TOKEN_BYTES {
        return Err(AccountsError::invalid(
            "id_token",
            format!("must be 1..{MAX_ID_TOKEN_BYTES} bytes"),
        ));
    }
    let nonce_chars = nonce.chars().count();
    if nonce_chars == 0 || nonce_chars > MAX_NONCE_CHARS {
        return Err(AccountsError::invalid(
            "nonce",
            format!("must be 1..{MAX_NONCE_CHARS} characters: the nonce the app gave the provider"),
        ));
    }
    Ok(())
}

/// The key id a token's header names; the header must also say RS256.
pub fn key_id(id_token: &str) -> Result<String, Rejection> {
    // An `alg` jsonwebtoken does not know (such as `none`) fails to parse: refused.
    let header = jsonwebtoken::decode_header(id_token).map_err(|e| match e.kind() {
        jsonwebtoken::errors::ErrorKind::Json(_) => Rejection::Header,
        _ => Rejection::Malformed,
    })?;
    if header.alg != Algorithm::RS256 {
        return Err(Rejection::Algorithm);
    }
    header.kid.ok_or(Rejection::NoKeyId)
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    nonce: Option<String>,
}

/// Checks `id_token` with `key` against `expected`; answers its subject.
pub fn check(
    id_token: &str,
    key: &DecodingKey,
    expected: &Expected<'_>,
) -> Result<String, Rejection> {
    let mut validation = Validation::new(Algorithm::RS256);
    validation.leeway = LEEWAY_SECONDS;
    validation.set_issuer(expected.issuers);
    validation.set_audience(expected.audiences);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<Claims>(id_token, key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::InvalidSignature | ErrorKind::InvalidRsaKey(_) => Rejection::Signature,
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => Rejection::Algorithm,
            ErrorKind::ExpiredSignature => Rejection::Expired,
            ErrorKind::InvalidIssuer => Rejection::Issuer,
            ErrorKind::InvalidAudience => Rejection::Audience,
            ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
                Rejection::Claims(claim.clone())
            }
            ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
                Rejection::Malformed
            }
            other => Rejection::Claims(format!("{other:?}")),
        }
    })?;
    let claims = data.claims;
    if claims.sub.is_empty() || claims.sub.chars().count() > MAX_SUBJECT_CHARS {
        return Err(Rejection::Claims("sub".into()));
    }
    let hashed = hex_sha256(expected.nonce);
    match claims.nonce.as_deref() {
        Some(n) if n == expected.nonce || n == hashed => Ok(claims.sub),
        _ => Err(Rejection::Nonce),
    }
}

fn hex_sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_bounded() {
        assert!(check_input("a.b.c", "n").is_ok());
        assert!(check_input("", "n").is_err());
        assert!(check_input("a.b.c", "").is_err());
        assert!(check_input(&"x".repeat(MAX_ID_TOKEN_BYTES + 1), "n").is_err());
        assert!(check_input("a.b.c", &"n".repeat(MAX_NONCE_CHARS + 1)).is_err());
    }

    #[test]
    fn nonce_hash_is_lower_hex() {
        assert_eq!(
            hex_sha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
