//! Service identity: a service mints its own short-lived tokens with its own key;
//! verifiers trust keys by kid, each for one role; rotation adds a kid, then removes
//! the old one; tokens keep verifying past one token's lifetime because the identity
//! mints the next one itself.

use std::time::Duration;

use basra_platform::auth::{
    AuthError, Caller, IdentitySettings, Role, ServiceIdentity, SigningKey, TokenIssuer,
    TokenVerifier, TrustedKey, TrustedKeySettings, load_trusted,
};
use basra_testkit::private_pem;
use uuid::Uuid;

const ISS: &str = "basra-accounts";
const AUD: &str = "basra";

/// A service identity with a fresh key under `kid`.
fn identity(kid: &str, ttl: Duration) -> ServiceIdentity {
    let key = SigningKey::from_pem(kid, &private_pem()).unwrap();
    ServiceIdentity::new(key, ISS, AUD, ttl)
}

/// A fresh private key in PKCS#8 PEM, as an operator would configure it.
fn assert_invalid(result: Result<Caller, AuthError>, what: &str) {
    match result {
        Err(AuthError::Invalid(message)) => assert!(
            message.contains(what),
            "expected a message about {what:?}, got {message:?}"
        ),
        other => panic!("expected Invalid({what}), got {other:?}"),
    }
}

#[test]
fn a_key_signs_only_the_roles_it_is_trusted_for() {
    let game = identity("game-session-s1", Duration::from_secs(60));
    let accounts = TokenIssuer::new(SigningKey::generate(), ISS, AUD);
    let verifier = TokenVerifier::trusting(
        vec![
            game.trusted_key(),
            TrustedKey {
                kid: accounts.kid().to_owned(),
                public_pem: accounts.public_pem().to_owned(),
                roles: vec![Role::Player],
            },
        ],
        ISS,
        AUD,
    )
    .unwrap();
    let caller = verifier.verify(&game.token().unwrap()).unwrap();
    assert_eq!(caller.role, Role::Service);
    let player = Caller {
        user_id: Uuid::now_v7(),
        role: Role::Player,
        guest: false,
    };
    let token = accounts.issue(&player, Duration::from_secs(60)).unwrap();
    assert_eq!(verifier.verify(&token.token).unwrap(), player);
    // The player key cannot make a service or an operator.
    for role in [Role::Service, Role::Operator] {
        let forged = Caller {
            role,
            ..player.clone()
        };
        let token = accounts.issue(&forged, Duration::from_secs(60)).unwrap();
        assert_invalid(verifier.verify(&token.token), "may not sign");
    }
}

#[test]
fn rotation_adds_the_new_kid_then_removes_the_old() {
    let old = identity("mm-1", Duration::from_secs(60));
    let new = identity("mm-2", Duration::from_secs(60));
    let before = TokenVerifier::trusting(vec![old.trusted_key()], ISS, AUD).unwrap();
    let during = before.and_trusting(vec![new.trusted_key()]).unwrap();
    let after = TokenVerifier::trusting(vec![new.trusted_key()], ISS, AUD).unwrap();
    let (old_token, new_token) = (old.token().unwrap(), new.token().unwrap());
    assert!(before.verify(&old_token).is_ok());
    assert_invalid(before.verify(&new_token), "unknown key");
    assert!(during.verify(&old_token).is_ok());
    assert!(during.verify(&new_token).is_ok());
    assert_invalid(after.verify(&old_token), "unknown key");
    assert!(after.verify(&new_token).is_ok());
    assert_eq!(during.kids(), vec!["mm-1", "mm-2"]);
}

#[test]
fn an_identity_outlives_its_tokens() {
    let game = identity("game-session-s1", Duration::from_secs(2));
    let verifier = TokenVerifier::trusting(vec![game.trusted_key()], ISS, AUD)
        .unwrap()
        .with_leeway(Duration::ZERO);
    let first = game.token().unwrap();
    assert_eq!(game.token().unwrap(), first, "reused while young");
    std::thread::sleep(Duration::from_millis(3_100));
    assert!(
        matches!(verifier.verify(&first), Err(AuthError::Expired)),
        "the first token is past its lifetime"
    );
    let later = game.token().unwrap();
    assert_ne!(later, first, "a new token was minted");
    assert_eq!(verifier.verify(&later).unwrap().role, Role::Service);
}

#[test]
fn identity_and_trusted_keys_load_from_settings_files() {
    let dir = std::env::temp_dir().join(format!("basra-identity-{}", Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    let private = private_pem();
    std::fs::write(dir.join("key.pem"), &private).unwrap();
    let settings = IdentitySettings {
        signing_key_file: dir.join("key.pem"),
        key_id: "mm-1".into(),
        token_ttl_seconds: 60,
    };
    let identity = settings.load(ISS, AUD).unwrap().expect("an identity");
    std::fs::write(dir.join("mm-1.pem"), identity.public_pem()).unwrap();
    let trusted = load_trusted(&[TrustedKeySettings {
        kid: "mm-1".into(),
        public_key_file: dir.join("mm-1.pem"),
        role: Role::Service,
    }])
    .unwrap();
    let verifier = TokenVerifier::trusting(trusted, ISS, AUD).unwrap();
    assert_eq!(
        verifier.verify(&identity.token().unwrap()).unwrap().role,
        Role::Service
    );
    assert!(
        IdentitySettings::default()
            .load(ISS, AUD)
            .unwrap()
            .is_none(),
        "no key file: no identity"
    );
    let missing = IdentitySettings {
        signing_key_file: dir.join("nope.pem"),
        ..settings
    };
    assert!(matches!(missing.load(ISS, AUD), Err(AuthError::Key(_))));
    std::fs::remove_dir_all(dir).unwrap();
}
