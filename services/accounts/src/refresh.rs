//! Refresh tokens: 32 random bytes shown to the client as 64 hex digits and
//! stored only as their SHA-256, grouped in families for rotation.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The SHA-256 of a refresh token: what the stores keep.
pub type TokenHash = [u8; 32];

/// A freshly minted refresh token.
#[derive(Clone)]
pub struct NewRefreshToken {
    /// What the client gets: 64 lower-case hex digits.
    pub token: String,
    /// What the store keeps.
    pub hash: TokenHash,
}

impl std::fmt::Debug for NewRefreshToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token itself.
        f.debug_struct("NewRefreshToken")
            .field("hash", &hex(&self.hash))
            .finish_non_exhaustive()
    }
}

impl NewRefreshToken {
    /// A new random token.
    pub fn generate() -> NewRefreshToken {
        let bytes: [u8; 32] = rand::random();
        NewRefreshToken {
            token: hex(&bytes),
            hash: Sha256::digest(bytes).into(),
        }
    }
}

/// The hash of a token a client presented, or `None` when it cannot be one of
/// ours (wrong length or not hex): such a token is simply unknown.
pub fn hash_presented(token: &str) -> Option<TokenHash> {
    let token = token.as_bytes();
    if token.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (i, pair) in token.chunks_exact(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        bytes[i] = (hi * 16 + lo) as u8;
    }
    Some(Sha256::digest(bytes).into())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A stored refresh token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshTokenRecord {
    /// SHA-256 of the token.
    pub hash: TokenHash,
    /// The sign-in it belongs to.
    pub family_id: Uuid,
    /// The account.
    pub user_id: Uuid,
    /// When it was issued.
    pub issued_at: DateTime<Utc>,
    /// When it stops working if unused.
    pub expires_at: DateTime<Utc>,
    /// When it was exchanged by Refresh.
    pub used_at: Option<DateTime<Utc>>,
    /// When it was revoked (logout, reuse, guest upgrade).
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What presenting a stored token at `now` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenState {
    /// It may be exchanged.
    Valid,
    /// Its time is up.
    Expired,
    /// It was revoked.
    Revoked,
    /// It was already exchanged: a replay, treated as theft (the family is revoked).
    Reused,
}

impl RefreshTokenRecord {
    /// The token's state at `now`. Revocation wins over reuse: a revoked family
    /// needs no second revocation.
    pub fn state(&self, now: DateTime<Utc>) -> TokenState {
        if self.revoked_at.is_some() {
            TokenState::Revoked
        } else if self.used_at.is_some() {
            TokenState::Reused
        } else if self.expires_at <= now {
            TokenState::Expired
        } else {
            TokenState::Valid
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_tokens_hash_like_new_ones() {
        let t = NewRefreshToken::generate();
        assert_eq!(t.token.len(), 64);
        assert_eq!(hash_presented(&t.token), Some(t.hash));
        assert_eq!(hash_presented(&t.token.to_uppercase()), Some(t.hash));
        assert_eq!(hash_presented("nope"), None);
        assert_eq!(hash_presented(&"z".repeat(64)), None);
        assert_eq!(hash_presented(&"é".repeat(32)), None);
        assert!(!format!("{t:?}").contains(&t.token));
    }
}
