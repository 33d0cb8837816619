//! The Devices page's card for units that name themselves by identifier
//! instead of a token: per tracker listener the operator opened, what to set
//! on the unit (this host, the listener's port, TCP or TLS; the Teltonika
//! Configurator's fields, the GT06 and H02 SMS commands, Queclink's AT
//! commands), and OwnTracks in MQTT mode when a broker is configured.

use maud::{Markup, html};

use super::widgets::copy;
use crate::services::device_feed::{DeviceListeners, TcpListenerPort};

/// `host`: the name units reach this service by (the API's public host).
pub fn card(listeners: &DeviceListeners, host: &str) -> Markup {
    html! {
        section.card data-field="tracker-setup" {
            h2 { "Trackers and OwnTracks over MQTT" }
            p.hint {
                "These name themselves instead of using a token: give the device the unit's IMEI "
                "(or, for OwnTracks over MQTT, its user/device) as its identifier, then set the unit as below."
            }
            @if listeners.tcp.is_empty() && listeners.mqtt.is_none() {
                p { "This service has no tracker listener open and no MQTT broker configured (the operator's "
                    code { "--tcp-ingest" } " and " code { "--mqtt-broker" } "); phone apps use a token, below." }
            }
            @for listener in &listeners.tcp { (tcp(listener, host)) }
            @if let Some(broker) = &listeners.mqtt {
                div data-tracker-setup="owntracks_mqtt" {
                    h3 { "OwnTracks (MQTT mode)" }
                    p.hint {
                        "Preferences → Connection: Mode MQTT, the broker's host and port"
                        @if broker.tls { ", TLS on" }
                        ", and the broker's credentials; Identification: User ID and Device ID, the two parts of the device's identifier (alice/truck7). "
                        "freight reads " code { (broker.topic) } "."
                    }
                    (copy("mqtt-host", "Host", &broker.host))
                    (copy("mqtt-port", "Port", &broker.port.to_string()))
                }
            }
        }
    }
}

fn tcp(listener: &TcpListenerPort, host: &str) -> Markup {
    let port = listener.port.to_string();
    let transport = if listener.tls { "TLS" } else { "TCP" };
    html! {
        div data-tracker-setup=(listener.protocol) {
            @match listener.protocol {
                "teltonika" => {
                    h3 { "Teltonika (FMB, FMC, FMM)" }
                    p.hint { "Configurator → GPRS → Server settings: Domain, Port, Protocol " (transport) "." }
                }
                "gt06" => {
                    h3 { "GT06 (Concox, Jimi and clones)" }
                    p.hint { "Send the unit these SMS; the second makes it report UTC." }
                    (copy("gt06-sms", "Server SMS", &format!("SERVER,0,{host},{port},0#")))
                    (copy("gt06-utc", "UTC SMS", "GMT,E,0#"))
                }
                "queclink" => {
                    h3 { "Queclink (GV, GL, GMT)" }
                    p.hint { "AT+GTBSI / AT+GTSRI: this server and port, report mode TCP long connection, text (not HEX) format." }
                }
                "h02" => {
                    h3 { "H02 (Sinotrack and clones)" }
                    p.hint { "Send the unit this SMS (the Sinotrack form; 0000 is the default password, others vary)." }
                    (copy("h02-sms", "SMS", &format!("8040000 {host} {port}")))
                }
                other => { h3 { (other) } }
            }
            (copy(&format!("{}-host", listener.protocol), "Server", host))
            (copy(&format!("{}-port", listener.protocol), "Port", &port))
            p.hint { "Protocol: " (transport) }
        }
    }
}

/// The host in an origin (`https://example.com:8443` → `example.com`).
pub fn host_of(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    let rest = rest.split('/').next().unwrap_or(rest);
    if let Some(v6) = rest.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    rest.rsplit_once(':').map_or(rest, |(host, _)| host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_an_origin_has_no_scheme_or_port() {
        assert_eq!(host_of("https://example.com:8443"), "example.com");
        assert_eq!(host_of("https://example.com"), "example.com");
        assert_eq!(host_of("https://[::1]:8443"), "::1");
    }
}
