//! The machine's time zone, for a reset named as a clock time with no zone, read without the
//! system's zoneinfo database: jiff's own lookup of the local zone walks every file under
//! `/usr/share/zoneinfo` on its first use, too slow for a failure hook that Claude Code kills
//! after about 0.1 s. Here it is one variable, and at most one link and one small file.

use jiff::tz::TimeZone;

/// `TZ` when set (a zone name, looked up in the database built into baton; a path to a TZif
/// file; or a POSIX rule such as `EST5EDT`), else `/etc/localtime` (named by its link into a
/// zoneinfo tree, else read as a TZif file), else UTC.
pub fn local_zone() -> TimeZone {
    match std::env::var("TZ") {
        Ok(tz) if !tz.trim().is_empty() => from_tz(tz.trim()),
        _ => from_localtime("/etc/localtime"),
    }
    .unwrap_or(TimeZone::UTC)
}

fn from_tz(tz: &str) -> Option<TimeZone> {
    let tz = tz.strip_prefix(':').unwrap_or(tz);
    if tz.starts_with('/') {
        return from_localtime(tz);
    }
    baton_core::reset::named_zone(tz).or_else(|| TimeZone::posix(tz).ok())
}

fn from_localtime(path: &str) -> Option<TimeZone> {
    if let Ok(target) = std::fs::read_link(path)
        && let Some(target) = target.to_str()
        && let Some(at) = target.rfind("zoneinfo/")
        && let Some(zone) = baton_core::reset::named_zone(&target[at + "zoneinfo/".len()..])
    {
        return Some(zone);
    }
    // Capped and only a regular file: `TZ=/dev/zero` or a FIFO must not hang or fill memory.
    let bytes = crate::read::read_named(std::path::Path::new(path), 1024 * 1024).ok()??;
    TimeZone::tzif("Local", &bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tz_value_is_a_name_a_rule_or_a_file() {
        let at: jiff::Timestamp = "2026-07-01T12:00:00Z".parse().unwrap();
        let offset = |tz: Option<TimeZone>| tz.map(|z| z.to_offset(at).seconds());
        assert_eq!(offset(from_tz("Europe/Warsaw")), Some(7200));
        assert_eq!(offset(from_tz(":America/New_York")), Some(-4 * 3600));
        assert_eq!(offset(from_tz("EST5EDT,M3.2.0,M11.1.0")), Some(-4 * 3600));
        assert_eq!(offset(from_tz("Nowhere/City")), None);
        assert_eq!(offset(from_tz("/nonexistent/zone")), None);
    }
}
