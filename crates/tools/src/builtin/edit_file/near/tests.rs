use super::*;

fn applied(text: &str, old: &str, new: &str) -> Option<String> {
    match locate(text, old, new) {
        Near::One(edit) => Some(edit.apply(text)),
        _ => None,
    }
}

#[test]
fn one_place_matching_but_for_indentation_is_edited_reindented() {
    let file =
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n";
    // Quoted from column 0, as a model copies a method.
    let got = applied(
        file,
        "def f(self):\n    return 1\n",
        "def f(self):\n    return 10\n",
    );
    assert_eq!(
        got.as_deref(),
        Some(
            "class A:\n    def f(self):\n        return 10\n\n    def g(self):\n        return 2\n"
        )
    );
    // Trailing spaces in old_string, and tabs in the file.
    let got = applied(
        "fn x() {\n\tlet a = 1;\n}\n",
        "    let a = 1;   ",
        "    let a = 2;",
    );
    assert_eq!(got.as_deref(), Some("fn x() {\n\tlet a = 2;\n}\n"));
    // CRLF stays CRLF; deleting lines takes their line ending.
    let got = applied("a\r\n  b\r\n  c\r\nd\r\n", "b\nc\n", "B\nC\n");
    assert_eq!(got.as_deref(), Some("a\r\n  B\r\n  C\r\nd\r\n"));
    let got = applied("a\n  b\nd\n", " b", "");
    assert_eq!(got.as_deref(), Some("a\nd\n"));
    match locate(file, "return 1", "x") {
        Near::One(edit) => assert_eq!(edit.lines, (3, 3)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ambiguous_or_absent_is_not_edited() {
    let file = "if a:\n    x = 1\nif b:\n        x = 1\n";
    assert_eq!(locate(file, "  x = 1", "x = 2"), Near::Many(vec![2, 4]));
    // Whitespace inside a line still matters, and blank old_strings match nothing.
    assert_eq!(locate(file, "x  = 1", "y"), Near::None);
    assert_eq!(locate(file, "\n  \n", "y"), Near::None);
    assert_eq!(locate("", "a", "b"), Near::None);
    // A fragment of a line is not a near match: only whole lines are.
    assert_eq!(locate("total = a + b\n", "a +  b", "c"), Near::None);
}

#[test]
fn closest_lines_are_numbered_for_the_next_attempt() {
    let file = "import os\n\ndef main():\n    print('hello world')\n    return 0\n";
    let got = closest(file, "def main():\n    print(\"hello world\")\n").unwrap();
    assert_eq!(
        got,
        " The closest lines are 3-4:\n     3\tdef main():\n     4\t    print('hello world')\n"
    );
    assert_eq!(closest(file, "something else entirely, long"), None);
    assert_eq!(closest(file, "   \n"), None);
}
