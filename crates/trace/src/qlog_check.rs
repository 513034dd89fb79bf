//! Reads a qlog JSON-SEQ trace back and checks it against what the qlog
//! main schema (draft-ietf-quic-qlog-main-schema-03) and qvis's loader
//! require, so a trace that passes opens and lines up in qvis.
//!
//! Checked: RFC 7464 framing (every record is RS, one JSON text, LF); a
//! header record with `qlog_format` "JSON-SEQ", a `qlog_version` qvis
//! knows, one `trace` with a `vantage_point` type and `common_fields` with
//! `time_format` "relative" and a numeric `reference_time`; then events
//! with a numeric, non-negative, never-decreasing `time`, a
//! `"category:event"` name and a `data` object whose packet header (if
//! any) names a known packet type and number, and keeps sizes in `raw`.

use serde_json::Value;

/// The qlog versions qvis's loader accepts for this record layout.
const VERSIONS: [&str; 2] = ["0.3", "draft-02"];
const PACKET_TYPES: [&str; 7] = [
    "initial",
    "handshake",
    "0RTT",
    "1RTT",
    "retry",
    "version_negotiation",
    "stateless_reset",
];

/// A parsed trace: its header record and its events in order.
#[derive(Debug, Clone)]
pub struct CheckedTrace {
    /// The header record (record 0) as JSON.
    pub header: Value,
    /// Every event record after the header, in file order.
    pub events: Vec<Value>,
}

/// Parses every record of `bytes` and checks it; the error names the
/// record (0 is the header) and what is wrong.
pub fn check(bytes: &[u8]) -> Result<CheckedTrace, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let Some(body) = text.strip_prefix('\u{1e}') else {
        return Err("does not start with the record separator 0x1E".into());
    };
    let mut records = Vec::new();
    for (i, r) in body.split('\u{1e}').enumerate() {
        let Some(json) = r.strip_suffix('\n') else {
            return Err(format!("record {i} does not end with a newline"));
        };
        let v: Value =
            serde_json::from_str(json).map_err(|e| format!("record {i} is not JSON: {e}"))?;
        if !v.is_object() {
            return Err(format!("record {i} is not a JSON object"));
        }
        records.push(v);
    }
    let header = records.remove(0);
    check_header(&header)?;
    let mut last = 0.0;
    for (i, ev) in records.iter().enumerate() {
        let at = format!("record {}", i + 1);
        let time = ev["time"]
            .as_f64()
            .ok_or(format!("{at}: no numeric \"time\""))?;
        if !time.is_finite() || time < 0.0 {
            return Err(format!("{at}: time {time} before the reference time"));
        }
        if time < last {
            return Err(format!("{at}: time {time} ms goes back from {last} ms"));
        }
        last = time;
        let name = ev["name"].as_str().ok_or(format!("{at}: no \"name\""))?;
        match name.split_once(':') {
            Some((c, e)) if !c.is_empty() && !e.is_empty() && !e.contains(':') => {}
            _ => return Err(format!("{at}: name {name:?} is not \"category:event\"")),
        }
        let data = &ev["data"];
        if !data.is_object() {
            return Err(format!("{at}: \"data\" is not an object"));
        }
        if data.get("packet_type").is_some() {
            return Err(format!("{at}: packet_type belongs in data.header"));
        }
        if let Some(h) = data.get("header") {
            let ty = h["packet_type"].as_str().unwrap_or_default();
            if !PACKET_TYPES.contains(&ty) {
                return Err(format!("{at}: unknown packet_type {:?}", h["packet_type"]));
            }
            if !h["packet_number"].is_u64() {
                return Err(format!("{at}: no packet_number"));
            }
            if h.get("packet_size").is_some() || h.get("payload_length").is_some() {
                return Err(format!("{at}: sizes belong in data.raw"));
            }
        }
    }
    Ok(CheckedTrace {
        header,
        events: records,
    })
}

fn check_header(h: &Value) -> Result<(), String> {
    if h["qlog_format"] != "JSON-SEQ" {
        return Err(format!(
            "header: qlog_format is {}, not \"JSON-SEQ\"",
            h["qlog_format"]
        ));
    }
    let version = h["qlog_version"].as_str().unwrap_or_default();
    if !VERSIONS.contains(&version) {
        return Err(format!("header: qlog_version {:?}", h["qlog_version"]));
    }
    let trace = &h["trace"];
    if !trace.is_object() {
        return Err("header: no \"trace\" object".into());
    }
    let vp = trace["vantage_point"]["type"].as_str().unwrap_or_default();
    if !["client", "server", "network", "unknown"].contains(&vp) {
        return Err(format!("header: vantage_point type {vp:?}"));
    }
    let common = &trace["common_fields"];
    if common["time_format"] != "relative" {
        return Err("header: common_fields.time_format is not \"relative\"".into());
    }
    if !common["reference_time"].is_number() {
        return Err("header: common_fields.reference_time is not a number".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"qlog_format":"JSON-SEQ","qlog_version":"0.3","trace":{"vantage_point":{"type":"client"},"common_fields":{"time_format":"relative","reference_time":1.5}}}"#;

    fn seq(records: &[&str]) -> Vec<u8> {
        records
            .iter()
            .flat_map(|r| format!("\u{1e}{r}\n").into_bytes())
            .collect()
    }

    #[test]
    fn a_good_trace_passes() {
        let ev = r#"{"time":0.5,"name":"transport:packet_sent","data":{"header":{"packet_type":"initial","packet_number":0},"raw":{"length":1200}}}"#;
        let t = check(&seq(&[HEADER, ev, ev])).unwrap();
        assert_eq!(t.events.len(), 2);
    }

    #[test]
    fn each_defect_is_named() {
        let cases = [
            (seq(&[&HEADER.replace("JSON-SEQ", "JSON")]), "qlog_format"),
            (seq(&[&HEADER.replace("0.3", "0.4")]), "qlog_version"),
            (seq(&[&HEADER.replace("client", "router")]), "vantage_point"),
            (seq(&[&HEADER.replace("1.5", "\"x\"")]), "reference_time"),
            (
                seq(&[
                    HEADER,
                    r#"{"time":2,"name":"a:b","data":{}}"#,
                    r#"{"time":1,"name":"a:b","data":{}}"#,
                ]),
                "goes back",
            ),
            (
                seq(&[HEADER, r#"{"time":1,"name":"ab","data":{}}"#]),
                "category:event",
            ),
            (
                seq(&[HEADER, r#"{"time":-1,"name":"a:b","data":{}}"#]),
                "before",
            ),
            (
                seq(&[
                    HEADER,
                    r#"{"time":1,"name":"a:b","data":{"header":{"packet_type":"2RTT","packet_number":1}}}"#,
                ]),
                "packet_type",
            ),
            (
                seq(&[
                    HEADER,
                    r#"{"time":1,"name":"a:b","data":{"header":{"packet_type":"1RTT","packet_number":1,"packet_size":9}}}"#,
                ]),
                "raw",
            ),
            (HEADER.as_bytes().to_vec(), "record separator"),
            (format!("\u{1e}{HEADER}").into_bytes(), "newline"),
        ];
        for (bytes, want) in cases {
            let err = check(&bytes).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want}");
        }
    }
}
