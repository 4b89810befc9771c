use mcp_core::version::*;

#[test]
fn every_supported_version_round_trips_through_its_string() {
    for v in ProtocolVersion::SUPPORTED {
        assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(v));
    }
}

#[test]
fn unknown_versions_are_refused_with_the_supported_list() {
    let err = "1999-01-01".parse::<ProtocolVersion>().unwrap_err();
    assert!(err.to_string().contains("1999-01-01"));
    assert!(err.to_string().contains("2024-11-05"));
    assert!("2026-07-29".parse::<ProtocolVersion>().is_err());
}

#[test]
fn versions_are_ordered_by_date() {
    assert!(ProtocolVersion::V2024_11_05 < ProtocolVersion::V2025_11_25);
    assert_eq!(ProtocolVersion::LATEST, ProtocolVersion::SUPPORTED[0]);
    assert!(!ProtocolVersion::V2025_03_26.has_protocol_version_header());
    assert!(ProtocolVersion::V2025_06_18.has_protocol_version_header());
    assert!(ProtocolVersion::V2026_07_28.has_protocol_version_header());
}

#[test]
fn only_2026_07_28_is_modern() {
    for v in ProtocolVersion::SUPPORTED {
        assert_eq!(v.is_modern(), v == ProtocolVersion::V2026_07_28, "{v}");
    }
    assert_eq!(ProtocolVersion::LATEST.era(), Era::Modern);
    assert_eq!(ProtocolVersion::LATEST_LEGACY.era(), Era::Legacy);
}
