//! Access tokens: what verifies, and every forgery that must not.

use std::time::Duration;

use basra_platform::auth::{
    AuthError, Caller, Role, SigningKey, TokenIssuer, TokenVerifier, TrustedKey,
};
use basra_testkit::private_pem;
use jsonwebtoken::{Algorithm, EncodingKey, Header, get_current_timestamp};
use serde_json::{Value, json};
use uuid::Uuid;

const ISS: &str = "basra-accounts";
const AUD: &str = "basra";
const TTL: Duration = Duration::from_secs(900);

/// A private key in PKCS#8 PEM, as an operator would configure it.
fn player() -> Caller {
    Caller {
        user_id: Uuid::now_v7(),
        role: Role::Player,
        guest: true,
    }
}

/// An issuer with kid "k1", its verifier, and its private PEM for forging.
fn setup() -> (TokenIssuer, TokenVerifier, String) {
    let pem = private_pem();
    let issuer = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), ISS, AUD);
    let verifier = issuer.verifier();
    (issuer, verifier, pem)
}

/// Claims as accounts writes them, for hand-made tokens.
fn claims(caller: &Caller, exp: u64) -> Value {
    json!({
        "sub": caller.user_id, "role": caller.role, "guest": caller.guest,
        "iss": ISS, "aud": AUD, "iat": get_current_timestamp(), "exp": exp,
        "jti": Uuid::now_v7(),
    })
}

fn sign_eddsa(pem: &str, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

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
fn issued_tokens_verify_to_the_same_caller() {
    let (issuer, verifier, _) = setup();
    for caller in [
        player(),
        Caller {
            user_id: Uuid::now_v7(),
            role: Role::Service,
            guest: false,
        },
        Caller {
            user_id: Uuid::now_v7(),
            role: Role::Operator,
            guest: false,
        },
    ] {
        // Bounded by clock readings around the call, not by a timed assertion: a busy
        // machine may take any time between issuing and checking. `exp` has whole seconds.
        let before = chrono::Utc::now();
        let issued = issuer.issue(&caller, TTL).unwrap();
        let after = chrono::Utc::now();
        assert_eq!(verifier.verify(&issued.token).unwrap(), caller);
        let ttl = chrono::Duration::from_std(TTL).unwrap();
        let earliest = before + ttl - chrono::Duration::seconds(1);
        assert!(
            (earliest..=after + ttl).contains(&issued.expires_at),
            "expires at {}, issued between {before} and {after}",
            issued.expires_at
        );
    }
}

#[test]
fn the_header_names_the_key_and_algorithm() {
    let (issuer, _, _) = setup();
    let token = issuer.issue(&player(), TTL).unwrap().token;
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, Algorithm::EdDSA);
    assert_eq!(header.kid.as_deref(), Some("k1"));
    let payload = decode_part(&token, 1);
    for claim in ["sub", "role", "guest", "iss", "aud", "iat", "exp", "jti"] {
        assert!(payload.get(claim).is_some(), "missing {claim} in {payload}");
    }
    assert_eq!(payload["role"], "player");
}

#[test]
fn a_generated_key_publishes_a_pem_other_services_verify_with() {
    let key = SigningKey::generate();
    let (kid, public_pem) = (key.kid().to_owned(), key.public_pem());
    assert!(kid.starts_with("dev-"), "{kid}");
    assert!(
        public_pem.starts_with("-----BEGIN PUBLIC KEY-----"),
        "{public_pem}"
    );
    let issuer = TokenIssuer::new(key, ISS, AUD);
    let elsewhere = TokenVerifier::new(vec![(kid, public_pem)], ISS, AUD).unwrap();
    let caller = player();
    assert_eq!(
        elsewhere
            .verify(&issuer.issue(&caller, TTL).unwrap().token)
            .unwrap(),
        caller
    );
    // Two generated keys differ in key and kid.
    assert_ne!(SigningKey::generate().kid(), SigningKey::generate().kid());
}

#[test]
fn during_a_rotation_both_keys_verify() {
    let (old, new) = (SigningKey::generate(), SigningKey::generate());
    let keys = vec![
        (old.kid().to_owned(), old.public_pem()),
        (new.kid().to_owned(), new.public_pem()),
    ];
    let verifier = TokenVerifier::new(keys, ISS, AUD).unwrap();
    for key in [old, new] {
        let token = TokenIssuer::new(key, ISS, AUD)
            .issue(&player(), TTL)
            .unwrap()
            .token;
        verifier.verify(&token).unwrap();
    }
}

#[test]
fn expired_tokens_are_rejected() {
    let (_, verifier, pem) = setup();
    // Past the 30 s leeway.
    let token = sign_eddsa(
        &pem,
        "k1",
        &claims(&player(), get_current_timestamp() - 120),
    );
    assert!(matches!(verifier.verify(&token), Err(AuthError::Expired)));
    // Within the leeway it still passes (clock skew between machines).
    let token = sign_eddsa(&pem, "k1", &claims(&player(), get_current_timestamp() - 5));
    verifier.verify(&token).unwrap();
}

#[test]
fn a_tampered_payload_is_rejected() {
    let (issuer, verifier, _) = setup();
    let token = issuer.issue(&player(), TTL).unwrap().token;
    let parts: Vec<&str> = token.split('.').collect();

    // A player making itself an operator: one changed claim.
    let mut payload = decode_part(&token, 1);
    payload["role"] = json!("operator");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64url_encode(payload.to_string().as_bytes()),
        parts[2]
    );
    assert_invalid(verifier.verify(&forged), "signature");

    // One flipped bit in the payload bytes.
    let mut bytes = b64url_decode(parts[1]);
    bytes[10] ^= 0x01;
    let flipped = format!("{}.{}.{}", parts[0], b64url_encode(&bytes), parts[2]);
    assert!(verifier.verify(&flipped).is_err());

    // One flipped bit in the signature.
    let mut signature = b64url_decode(parts[2]);
    signature[0] ^= 0x01;
    let flipped = format!("{}.{}.{}", parts[0], parts[1], b64url_encode(&signature));
    assert_invalid(verifier.verify(&flipped), "signature");
}

#[test]
fn a_token_signed_by_another_key_under_a_known_kid_is_rejected() {
    let (_, verifier, _) = setup();
    let token = sign_eddsa(
        &private_pem(),
        "k1",
        &claims(&player(), get_current_timestamp() + 600),
    );
    assert_invalid(verifier.verify(&token), "signature");
}

#[test]
fn unknown_or_missing_kids_are_rejected() {
    let (_, verifier, pem) = setup();
    let exp = get_current_timestamp() + 600;
    assert_invalid(
        verifier.verify(&sign_eddsa(&pem, "k2", &claims(&player(), exp))),
        "unknown key",
    );

    let no_kid = jsonwebtoken::encode(
        &Header::new(Algorithm::EdDSA),
        &claims(&player(), exp),
        &EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap();
    assert_invalid(verifier.verify(&no_kid), "key id");
}

#[test]
fn alg_none_is_rejected() {
    let (issuer, verifier, _) = setup();
    let payload = decode_part(&issuer.issue(&player(), TTL).unwrap().token, 1);
    let header = json!({"alg": "none", "typ": "JWT", "kid": "k1"});
    for signature in ["", "AAAA"] {
        let token = format!(
            "{}.{}.{signature}",
            b64url_encode(header.to_string().as_bytes()),
            b64url_encode(payload.to_string().as_bytes())
        );
        assert_invalid(verifier.verify(&token), "EdDSA");
    }
}

#[test]
fn hs256_signed_with_the_public_key_is_rejected() {
    // The classic key-confusion attack: the public key is public, so an
    // attacker can compute an HMAC with it.
    let key = SigningKey::generate();
    let (kid, public_pem) = (key.kid().to_owned(), key.public_pem());
    let verifier = TokenVerifier::new(vec![(kid.clone(), public_pem.clone())], ISS, AUD).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid);
    let secret = EncodingKey::from_secret(public_pem.as_bytes()).unwrap();
    let token = jsonwebtoken::encode(
        &header,
        &claims(&player(), get_current_timestamp() + 600),
        &secret,
    )
    .unwrap();
    assert_invalid(verifier.verify(&token), "EdDSA");
}

#[test]
fn wrong_issuer_or_audience_is_rejected() {
    let pem = private_pem();
    let verifier = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), ISS, AUD).verifier();
    let other_iss = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), "evil", AUD);
    let other_aud = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), ISS, "other");
    assert_invalid(
        verifier.verify(&other_iss.issue(&player(), TTL).unwrap().token),
        "iss",
    );
    assert_invalid(
        verifier.verify(&other_aud.issue(&player(), TTL).unwrap().token),
        "aud",
    );
}

#[test]
fn garbage_is_malformed() {
    let (_, verifier, _) = setup();
    for token in ["", "abc", "a.b", "a.b.c", "@@@.###.$$$"] {
        assert!(
            matches!(
                verifier.verify(token),
                Err(AuthError::Malformed | AuthError::Invalid(_))
            ),
            "{token:?} accepted or misreported"
        );
    }
    assert!(matches!(verifier.verify("abc"), Err(AuthError::Malformed)));
}

#[test]
fn bad_key_material_is_a_key_error() {
    assert!(matches!(
        SigningKey::from_pem("k1", "not a pem"),
        Err(AuthError::Key(_))
    ));
    assert!(matches!(
        SigningKey::from_pem("", &private_pem()),
        Err(AuthError::Key(_))
    ));
    let public = SigningKey::generate().public_pem();
    // A public key is not a signing key, and a private key is not a public one.
    assert!(matches!(
        SigningKey::from_pem("k1", &public),
        Err(AuthError::Key(_))
    ));
    assert!(matches!(
        TokenVerifier::new(vec![("k1".into(), private_pem())], ISS, AUD),
        Err(AuthError::Key(_))
    ));
    assert!(matches!(
        TokenVerifier::new(vec![], ISS, AUD),
        Err(AuthError::Key(_))
    ));
    assert!(matches!(
        TokenVerifier::new(
            vec![("k".into(), public.clone()), ("k".into(), public)],
            ISS,
            AUD
        ),
        Err(AuthError::Key(_))
    ));
}

#[test]
fn a_token_whose_nbf_is_ahead_is_rejected_past_the_leeway() {
    let (_, verifier, pem) = setup();
    let now = get_current_timestamp();
    let with_nbf = |nbf: u64| {
        let mut claims = claims(&player(), now + 7200);
        claims["nbf"] = json!(nbf);
        sign_eddsa(&pem, "k1", &claims)
    };
    assert_invalid(verifier.verify(&with_nbf(now + 3600)), "not valid yet");
    // Within the leeway (30 s), as for exp: clocks differ a little.
    assert!(verifier.verify(&with_nbf(now + 10)).is_ok());
    assert!(verifier.verify(&with_nbf(now - 60)).is_ok());
}

#[test]
fn a_key_signs_only_the_roles_it_is_trusted_for() {
    let pem = private_pem();
    let issuer = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), ISS, AUD);
    let as_role = |role| Caller { role, ..player() };
    let token = |role| issuer.issue(&as_role(role), TTL).unwrap().token;
    let players_only = issuer.verifier_for(&[Role::Player]);
    assert!(players_only.verify(&token(Role::Player)).is_ok());
    for role in [Role::Service, Role::Operator] {
        assert_invalid(players_only.verify(&token(role)), "may not sign");
    }
    // The same key listed again for another role signs that role too; not a third.
    let same_key = TrustedKey {
        kid: "k1".into(),
        public_pem: issuer.public_pem().to_owned(),
        roles: vec![Role::Service],
    };
    let wider = players_only.and_trusting(vec![same_key.clone()]).unwrap();
    assert!(wider.verify(&token(Role::Player)).is_ok());
    assert!(wider.verify(&token(Role::Service)).is_ok());
    assert_invalid(wider.verify(&token(Role::Operator)), "may not sign");
    // Another key under the same kid is refused.
    let other = TrustedKey {
        public_pem: SigningKey::generate().public_pem(),
        ..same_key
    };
    assert!(matches!(
        players_only.and_trusting(vec![other]),
        Err(AuthError::Key(_))
    ));
}

/// An operator's token names the operator: the verifier gives the name beside the
/// caller; a name in another role's token, or one no audit could show, makes the
/// token invalid, and the issuer refuses to write either.
#[test]
fn an_operator_token_names_the_operator_and_only_an_operator_token_does() {
    let (issuer, verifier, pem) = setup();
    let operator = Caller {
        user_id: Uuid::now_v7(),
        role: Role::Operator,
        guest: false,
    };
    let token = issuer.issue_named(&operator, Some("nour"), TTL).unwrap();
    let verified = verifier.verify_claims(&token.token).unwrap();
    assert_eq!(verified.caller, operator);
    assert_eq!(verified.operator_name.as_deref(), Some("nour"));
    assert_eq!(decode_part(&token.token, 1)["name"], "nour");
    // Unnamed tokens verify as before, without a name.
    let plain = issuer.issue(&operator, TTL).unwrap();
    assert_eq!(
        verifier.verify_claims(&plain.token).unwrap().operator_name,
        None
    );
    assert!(decode_part(&plain.token, 1).get("name").is_none());

    assert!(issuer.issue_named(&player(), Some("nour"), TTL).is_err());
    assert!(issuer.issue_named(&operator, Some(""), TTL).is_err());
    assert!(
        issuer
            .issue_named(&operator, Some(&"x".repeat(65)), TTL)
            .is_err()
    );
    assert!(issuer.issue_named(&operator, Some("a\nb"), TTL).is_err());

    let exp = get_current_timestamp() + 600;
    for (caller, name) in [
        (player(), "nour".to_owned()),
        (operator.clone(), "x".repeat(65)),
        (operator.clone(), "bell\u{7}".to_owned()),
    ] {
        let mut forged = claims(&caller, exp);
        forged["name"] = json!(name);
        assert_invalid(
            verifier.verify(&sign_eddsa(&pem, "k1", &forged)),
            "name must be",
        );
    }
}

#[test]
fn debug_output_hides_the_private_key() {
    let pem = private_pem();
    let shown = format!("{:?}", SigningKey::from_pem("k1", &pem).unwrap());
    let issuer = TokenIssuer::new(SigningKey::from_pem("k1", &pem).unwrap(), ISS, AUD);
    let shown = format!("{shown} {issuer:?} {:?}", issuer.verifier());
    assert!(shown.contains("k1"), "{shown}");
    assert!(!shown.contains("PRIVATE"), "{shown}");
}

/// Part `index` of a JWT, decoded as JSON.
fn decode_part(token: &str, index: usize) -> Value {
    serde_json::from_slice(&b64url_decode(token.split('.').nth(index).unwrap())).unwrap()
}

const B64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding, as JWTs use (written out here so the test
/// builds tokens from bytes, independently of the code under test).
fn b64url_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(B64URL[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn b64url_decode(text: &str) -> Vec<u8> {
    let sextets: Vec<u32> = text
        .bytes()
        .map(|c| B64URL.iter().position(|&b| b == c).expect("base64url") as u32)
        .collect();
    let mut out = Vec::new();
    for chunk in sextets.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, s)| n | s << (18 - 6 * i));
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[test]
fn the_test_base64_is_right() {
    assert_eq!(b64url_encode(b"hello"), "aGVsbG8");
    assert_eq!(b64url_encode(b"\xfb\xff"), "-_8");
    for len in 0..10 {
        let bytes: Vec<u8> = (0..len).map(|i: u8| i.wrapping_mul(37)).collect();
        assert_eq!(b64url_decode(&b64url_encode(&bytes)), bytes);
    }
}
