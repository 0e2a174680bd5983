//! The address of the client behind a call, for per-address limits.
//!
//! Behind a load balancer or an ingress every call's TCP peer is the proxy, so a
//! per-peer limit would be one limit for everyone. The proxy names the client in
//! `forwarded` (RFC 7239, `for=`) or `x-forwarded-for`; anyone can send those
//! headers, so they are believed only when the peer is a configured trusted proxy,
//! and only as far back as the chain of trusted proxies goes: the answer is the
//! right-most address that is not itself a trusted proxy.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use tonic::metadata::MetadataMap;

/// The client's address: the peer's, unless the peer is in `trusted`, in which case
/// the right-most untrusted address of the forwarding chain (`forwarded` when present,
/// else `x-forwarded-for`). `None` when the peer is unknown (an in-process call).
pub fn client_ip(
    peer: Option<SocketAddr>,
    metadata: &MetadataMap,
    trusted: &[IpNet],
) -> Option<IpAddr> {
    let peer = peer?.ip();
    if !is_trusted(peer, trusted) {
        return Some(peer);
    }
    let chain = forwarded_chain(metadata);
    Some(pick_from_chain(peer, &chain, trusted))
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    let ip = ip.to_canonical();
    trusted.iter().any(|net| net.contains(&ip))
}

/// The addresses the proxies added, left (the original client) to right (the proxy
/// nearest to us); an address that does not parse ends the chain there, since
/// nothing left of it can be trusted either.
fn forwarded_chain(metadata: &MetadataMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<Option<IpAddr>> = metadata
        .get_all("forwarded")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(forwarded_for)
        .collect();
    if !forwarded.is_empty() {
        return forwarded;
    }
    metadata
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|item| parse_node(item.trim()))
        .collect()
}

/// The `for=` of one `forwarded` element (`for=192.0.2.60;proto=http`), if it has one.
fn forwarded_for(element: &str) -> Option<Option<IpAddr>> {
    element.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then(|| parse_node(value.trim().trim_matches('"')))
    })
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]:4711`. Obfuscated identifiers (`unknown`, `_hidden`) are `None`.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = node.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    node.strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(ip, _)| ip.parse().ok())
}

/// Walks the chain from the right past trusted proxies; the first untrusted address
/// is the client. A chain of only trusted proxies answers its left-most address; a
/// chain broken by an unparsable entry answers the last trusted hop before it.
fn pick_from_chain(peer: IpAddr, chain: &[Option<IpAddr>], trusted: &[IpNet]) -> IpAddr {
    let mut nearest = peer;
    for hop in chain.iter().rev() {
        match hop {
            Some(ip) if is_trusted(*ip, trusted) => nearest = *ip,
            Some(ip) => return *ip,
            None => return nearest,
        }
    }
    nearest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn metadata(headers: &[(&'static str, &str)]) -> MetadataMap {
        let mut map = MetadataMap::new();
        for (name, value) in headers {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn peer(ip: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(ip.parse().unwrap(), 40000))
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let md = metadata(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=5.6.7.8")]);
        assert_eq!(client_ip(peer("203.0.113.9"), &md, &[]), ip("203.0.113.9"));
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(
            client_ip(peer("203.0.113.9"), &md, &trusted),
            ip("203.0.113.9")
        );
        assert_eq!(client_ip(None, &md, &trusted), None);
    }

    #[test]
    fn a_trusted_proxy_names_the_client_right_most_untrusted_first() {
        let trusted = nets(&["10.0.0.0/8"]);
        // A client-supplied (spoofed) entry on the left is ignored: the right-most
        // untrusted address is what our proxy saw.
        let md = metadata(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.1.2.3")]);
        assert_eq!(
            client_ip(peer("10.0.0.5"), &md, &trusted),
            ip("198.51.100.7")
        );
        // Several headers are one list, in order.
        let md = metadata(&[
            ("x-forwarded-for", "198.51.100.7"),
            ("x-forwarded-for", "10.1.2.3"),
        ]);
        assert_eq!(
            client_ip(peer("10.0.0.5"), &md, &trusted),
            ip("198.51.100.7")
        );
    }

    #[test]
    fn forwarded_wins_over_x_forwarded_for_and_its_forms_parse() {
        let trusted = nets(&["10.0.0.0/8", "fd00::/8"]);
        let md = metadata(&[
            ("x-forwarded-for", "192.0.2.1"),
            (
                "forwarded",
                "for=\"[2001:db8::17]:4711\";proto=https, for=10.9.9.9",
            ),
        ]);
        assert_eq!(
            client_ip(peer("fd00::1"), &md, &trusted),
            ip("2001:db8::17")
        );
        let md = metadata(&[("forwarded", "proto=http;For=192.0.2.60:8080")]);
        assert_eq!(client_ip(peer("10.0.0.1"), &md, &trusted), ip("192.0.2.60"));
    }

    #[test]
    fn without_a_usable_chain_the_nearest_trusted_hop_answers() {
        let trusted = nets(&["10.0.0.0/8"]);
        // No header: the proxy itself (all its clients share one limit, as before).
        assert_eq!(
            client_ip(peer("10.0.0.5"), &metadata(&[]), &trusted),
            ip("10.0.0.5")
        );
        // Garbage right of a trusted hop: stop there, never read further left.
        let md = metadata(&[("x-forwarded-for", "198.51.100.7, unknown, 10.1.2.3")]);
        assert_eq!(client_ip(peer("10.0.0.5"), &md, &trusted), ip("10.1.2.3"));
        // Only trusted hops: the left-most.
        let md = metadata(&[("x-forwarded-for", "10.3.3.3, 10.1.2.3")]);
        assert_eq!(client_ip(peer("10.0.0.5"), &md, &trusted), ip("10.3.3.3"));
    }

    #[test]
    fn ipv4_mapped_peers_match_ipv4_networks() {
        let trusted = nets(&["10.0.0.0/8"]);
        let md = metadata(&[("x-forwarded-for", "198.51.100.7")]);
        assert_eq!(
            client_ip(peer("::ffff:10.0.0.5"), &md, &trusted),
            ip("198.51.100.7")
        );
    }
}
