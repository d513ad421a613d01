use pretty_assertions::assert_eq;

use super::*;

fn pairs(file: &str, code: &str) -> Vec<(String, String)> {
    place(file, code)
}

/// `file` with the placed edits applied, as edit_file would apply them.
fn applied(file: &str, code: &str) -> Option<String> {
    let edits = place(file, code);
    if edits.is_empty() {
        return None;
    }
    let mut text = file.to_owned();
    for (old, new) in edits {
        assert_eq!(
            text.matches(old.as_str()).count(),
            1,
            "{old:?} is not unique"
        );
        text = text.replacen(old.as_str(), &new, 1);
    }
    Some(text)
}

const GEOMETRY: &str = "import math\n\n\ndef circle_area(r):\n    \"\"\"Area.\"\"\"\n    return math.pi * r * r\n\n\ndef square_perimeter(side):\n    \"\"\"Perimeter.\"\"\"\n    return side * 2\n";

#[test]
fn a_definition_replaces_its_namesake_and_leaves_the_rest() {
    // The model's own parameter name, its docstring dropped: it is still that function.
    let code = "def square_perimeter(s):\n    return s * 4";
    assert_eq!(
        applied(GEOMETRY, code).unwrap(),
        GEOMETRY.replace(
            "def square_perimeter(side):\n    \"\"\"Perimeter.\"\"\"\n    return side * 2",
            "def square_perimeter(s):\n    return s * 4"
        )
    );
    // An import the file has, and a comment, may come with it; the first function is untouched.
    let code = "import math\n\n# fixed\ndef square_perimeter(side):\n    return side * 4\n";
    let got = applied(GEOMETRY, code).unwrap();
    assert!(got.contains("return math.pi * r * r") && got.contains("return side * 4"));
}

#[test]
fn a_method_is_reindented_to_the_file_and_brace_bodies_are_whole() {
    let file = "class Cart:\n    def total(self):\n        return 0\n\n    def empty(self):\n        return True\n";
    let got = applied(file, "def total(self):\n    return sum(self.items)").unwrap();
    assert_eq!(
        got,
        "class Cart:\n    def total(self):\n        return sum(self.items)\n\n    def empty(self):\n        return True\n"
    );
    let rust = "fn a() -> u32 {\n    let s = \"}\";\n    1\n}\n\nfn b() -> u32 {\n    2\n}\n";
    let got = applied(rust, "fn a() -> u32 {\n    let s = \"}\";\n    3\n}").unwrap();
    assert_eq!(got, rust.replace("    1\n", "    3\n"));
    let js = "export function add(a, b) {\n  return a - b;\n}\n";
    let got = applied(js, "function add(a, b) {\n  return a + b;\n}").unwrap();
    assert_eq!(got, "export function add(a, b) {\n  return a + b;\n}\n");
}

#[test]
fn a_stub_filled_in_is_placed() {
    let file = "def is_even(n):\n    \"\"\"True when n is even.\"\"\"\n    pass\n";
    assert_eq!(
        applied(file, "def is_even(n):\n    return n % 2 == 0").unwrap(),
        "def is_even(n):\n    return n % 2 == 0\n"
    );
}

#[test]
fn the_whole_file_rewritten_is_placed_as_the_whole_file() {
    let file = "x = 1\ny = 2\nprint(x + y)\n";
    assert_eq!(
        pairs(file, "x = 1\ny = 3\nprint(x + y)"),
        vec![(
            file.trim_end().to_owned(),
            "x = 1\ny = 3\nprint(x + y)".to_owned()
        )]
    );
}

#[test]
fn what_has_no_clear_place_is_not_placed() {
    let cases: &[(&str, &str, &str)] = &[
        ("the file as it is", GEOMETRY, GEOMETRY),
        (
            "the function as it is",
            GEOMETRY,
            "def circle_area(r):\n    \"\"\"Area.\"\"\"\n    return math.pi * r * r",
        ),
        ("a fragment", GEOMETRY, "    return side * 4"),
        (
            "a function the file lacks",
            GEOMETRY,
            "def volume(r):\n    return r ** 3",
        ),
        (
            "a call, not a definition",
            GEOMETRY,
            "print(circle_area(2))",
        ),
        (
            "a new import would be lost",
            GEOMETRY,
            "import os\n\ndef square_perimeter(side):\n    return side * 4",
        ),
        (
            "a namesake defined twice",
            "def f():\n    return 1\n\ndef f():\n    return 2\n",
            "def f():\n    return 3",
        ),
        (
            "the same function twice",
            GEOMETRY,
            "def circle_area(r):\n    return 1\n\ndef circle_area(r):\n    return 2",
        ),
        (
            "a different kind of namesake",
            "class area:\n    pass\n",
            "def area():\n    return 1",
        ),
        (
            "the file with lines dropped",
            "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n",
            "a = 1\nb = 2",
        ),
        (
            "the file without its first line",
            "import os\nx = 1\ny = 2\nz = 3\n",
            "x = 1\ny = 2\nz = 4",
        ),
        ("an empty file", "", "x = 1"),
        (
            "a stub for a body with code",
            GEOMETRY,
            "def circle_area(r):\n    # Your implementation here\n    pass",
        ),
        ("a body emptied", GEOMETRY, "def circle_area(r):\n    pass"),
        (
            "an elided rest",
            GEOMETRY,
            "def circle_area(r):\n    return 3.14 * r * r\n\n# ... rest of the file unchanged",
        ),
        (
            "an ellipsis",
            GEOMETRY,
            "def square_perimeter(side):\n    ...\n    return side * 4",
        ),
    ];
    for (what, file, code) in cases {
        assert_eq!(pairs(file, code), vec![], "{what}");
    }
}

#[test]
fn headers_are_read_for_the_common_languages() {
    for (line, want) in [
        ("def f(x):", Some(("def", "f"))),
        ("    async def fetch(url):", Some(("def", "fetch"))),
        ("class Cart(Base):", Some(("class", "Cart"))),
        ("pub(crate) fn run() {", Some(("fn", "run"))),
        ("pub async fn go() {", Some(("fn", "go"))),
        ("export default function App() {", Some(("function", "App"))),
        ("func main() {", Some(("func", "main"))),
        ("struct Point {", Some(("struct", "Point"))),
        ("define(x)", None),
        ("return f(x)", None),
        ("def (x):", None),
    ] {
        assert_eq!(header(line), want, "{line}");
    }
}

#[test]
fn awkward_text_never_panics() {
    let awkward = [
        "\u{3000}def f():\n\u{3000}\u{3000}return 1",
        "def f():\n\t\u{a0}return é",
        "def \u{e9}t\u{e9}():\n    pass",
        "}}}{{{",
        "def f(:\n",
        "\n\n\n",
        "fn a() {\n\"\\\"{\"\n}",
    ];
    for file in awkward {
        for code in awkward {
            let _ = place(file, code);
        }
    }
}
