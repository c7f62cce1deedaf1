//! JSON written byte for byte as Python's `json.dumps(value, indent=2) + "\n"` writes it, the way
//! the originating project writes its feature pointer. A rewrite by baton then shows in `git
//! diff` as the one field it changed, never as a reformatted file.
//!
//! What `json.dumps` does with its defaults, and so what this does: two spaces per level, `", "`
//! never appears (with an indent the item separator is `","` at the end of a line), `": "`
//! between a key and its value, `{}` and `[]` for empty containers, and `ensure_ascii=True`:
//! every character outside printable ASCII (DEL and everything above it) is written as
//! `\uXXXX` in lowercase hex, a character beyond the BMP as its UTF-16 surrogate pair. Floats
//! are written as Python's `repr` writes them (`1e+16`, `1e-05`, `0.5`, `3.0`).

use serde_json::Value;

/// `json.dumps(value, indent=2) + "\n"`.
pub fn dumps_indent2(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, 0);
    out.push('\n');
    out
}

fn indent(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (None, None, Some(f)) => out.push_str(&float_repr(f)),
            (None, None, None) => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            indent(out, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item, level + 1);
            }
            indent(out, level);
            out.push('}');
        }
    }
}

/// Python's `py_encode_basestring_ascii`.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that read back as the same float, in fixed
/// notation when the decimal exponent is in `-4..16`, else as `d.ddde+XX`.
fn float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: `1.5e-7`, `1e20`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{int}.{frac}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each expected string is what CPython 3 prints for `json.dumps(v, indent=2) + "\n"`.
    #[test]
    fn writes_what_python_writes() {
        let rows: &[(Value, &str)] = &[
            (json!({}), "{}\n"),
            (json!([]), "[]\n"),
            (
                json!({"id": "F-001", "n": 3, "ok": true, "none": null}),
                "{\n  \"id\": \"F-001\",\n  \"n\": 3,\n  \"ok\": true,\n  \"none\": null\n}\n",
            ),
            (
                json!({"scope": {"allowed": ["src/", "tests/"], "forbidden": []}, "e": {}}),
                "{\n  \"scope\": {\n    \"allowed\": [\n      \"src/\",\n      \"tests/\"\n    ],\n    \"forbidden\": []\n  },\n  \"e\": {}\n}\n",
            ),
            (
                json!({"t": "caf\u{e9} \u{1f600} \"q\" \\ \n\t\u{1}\u{7f}"}),
                "{\n  \"t\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\n\\t\\u0001\\u007f\"\n}\n",
            ),
            (json!(-7), "-7\n"),
        ];
        for (value, want) in rows {
            assert_eq!(dumps_indent2(value), *want, "{value}");
        }
    }

    #[test]
    fn floats_are_written_as_python_repr_writes_them() {
        let rows: &[(f64, &str)] = &[
            (0.5, "0.5"),
            (3.0, "3.0"),
            (-2.25, "-2.25"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123456.789, "123456.789"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.0, "0.0"),
        ];
        for (f, want) in rows {
            assert_eq!(float_repr(*f), *want, "{f}");
        }
    }

    proptest::proptest! {
        /// Whatever it writes reads back as the same value.
        #[test]
        fn round_trips(s in "\\PC*", n in proptest::num::i64::ANY, f in proptest::num::f64::NORMAL) {
            let value = json!({"s": s, "n": n, "f": f, "a": [s, {"k": n}]});
            let back: Value = serde_json::from_str(&dumps_indent2(&value)).unwrap();
            // Compared with serde_json's own round trip: its float parser, not this writer,
            // decides the last bit of a float read back.
            let own: Value = serde_json::from_str(&value.to_string()).unwrap();
            proptest::prop_assert_eq!(back, own);
        }
    }
}
