use mcp_core::service::*;

#[derive(Debug, PartialEq)]
struct Choice(u8);

#[test]
fn one_value_per_type_found_by_its_type() {
    let mut attachments = Attachments::new();
    assert_eq!(attachments.get::<Choice>(), None);
    attachments.insert(Choice(1));
    attachments.insert("other");
    attachments.insert(Choice(2));
    assert_eq!(attachments.get::<Choice>(), Some(&Choice(2)));
    assert_eq!(attachments.get::<&str>(), Some(&"other"));
    assert_eq!(format!("{attachments:?}"), "Attachments { values: 2 }");
}

#[test]
fn a_clone_keeps_its_values_when_the_original_changes() {
    let mut original = Attachments::new();
    original.insert(Choice(1));
    let copy = original.clone();
    original.insert(Choice(2));
    assert_eq!(copy.get::<Choice>(), Some(&Choice(1)));
    assert_eq!(original.get::<Choice>(), Some(&Choice(2)));
}
