//! `freight accounts …` and `freight keys …`: requests to the admin listener of a
//! running server, authorised by the admin token in its data directory.

use anyhow::{Context, anyhow};
use serde_json::{Value, json};

use super::{AccountsCommand, AdminConnection, KeysCommand, UsersCommand};
use crate::server::admin_token;

struct AdminClient {
    http: reqwest::Client,
    base: String,
    token: String,
    json: bool,
}

impl AdminClient {
    fn connect(connection: &AdminConnection) -> anyhow::Result<Self> {
        let token = admin_token::read(&connection.data_dir).map_err(|e| {
            anyhow!(
                "{e:#}\nRun this command with the same --data-dir (or FREIGHT_DATA_DIR) as `freight serve`."
            )
        })?;
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .context("building the HTTP client")?;
        Ok(Self {
            http,
            base: connection.admin_url.trim_end_matches('/').to_owned(),
            token,
            json: connection.json,
        })
    }

    /// Sends a request and returns `data` of the envelope, or the server's error.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}/admin/v1{path}", self.base);
        let mut request = self.http.request(method, &url).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| {
            anyhow!(
                "cannot reach the freight admin listener at {} ({e}).\n\
                 Is `freight serve` running? Use --admin-url (or FREIGHT_ADMIN_URL) if it listens elsewhere.",
                self.base
            )
        })?;
        let status = response.status();
        let envelope: Value = response
            .json()
            .await
            .with_context(|| format!("{url} answered {status} with a body that is not JSON"))?;
        if status.is_success() {
            return Ok(envelope["data"].clone());
        }
        let error = &envelope["error"];
        let mut message = format!(
            "{} ({}, HTTP {})",
            error["message"].as_str().unwrap_or("request failed"),
            error["code"].as_str().unwrap_or("UNKNOWN"),
            status.as_u16()
        );
        if let Some(errors) = error["details"]["errors"].as_array() {
            for e in errors {
                message.push_str(&format!(
                    "\n  {}: {}",
                    e["field"].as_str().unwrap_or("?"),
                    e["message"].as_str().unwrap_or("?")
                ));
            }
        }
        Err(anyhow!(message))
    }

    /// Prints `value` as one JSON object, or `text` for people.
    fn print(&self, value: &Value, text: impl FnOnce(&Value) -> String) {
        if self.json {
            println!("{value}");
        } else {
            println!("{}", text(value));
        }
    }
}

fn describe_account(a: &Value) -> String {
    format!(
        "{}  {}  plan={} ({} requests/hour, {} streams)  created {}{}",
        a["id"].as_str().unwrap_or("?"),
        a["name"].as_str().unwrap_or("?"),
        a["plan"].as_str().unwrap_or("?"),
        a["requests_per_hour"],
        a["max_streams"],
        a["created_at"].as_str().unwrap_or("?"),
        if a["disabled"] == true {
            "  DISABLED"
        } else {
            ""
        },
    )
}

/// The key a `keys revoke` argument names: its id (`key_…`), or the token's
/// printed prefix (`frk_<suffix>`, which holds the id's suffix), or the whole
/// token.
fn key_id_of(given: &str) -> String {
    let given = given.trim();
    match given.strip_prefix(crate::domain::api_key::TOKEN_PREFIX) {
        Some(rest) => format!("key_{}", rest.split('_').next().unwrap_or(rest)),
        None => given.to_owned(),
    }
}

/// The first line of `keys list`, naming the columns of [`key_row`].
const KEY_HEADER: &str = "ID  ACCOUNT  PERMISSIONS  STATE  DESCRIPTION";

/// A key as one line of `keys list`, in [`KEY_HEADER`]'s columns.
fn key_row(k: &Value) -> String {
    let [id, account, permissions, state, description] = key_fields(k);
    format!("{id}  {account}  {permissions}  {state}  {description}")
}

/// A key on its own (created, revoked), each field named.
fn describe_key(k: &Value) -> String {
    let [id, account, permissions, state, description] = key_fields(k);
    format!("{id}  account={account}  permissions={permissions}  {state}  {description}")
}

fn key_fields(k: &Value) -> [String; 5] {
    let permissions: Vec<&str> = k["permissions"]
        .as_array()
        .map(|ps| ps.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let expired = k["expires_at"]
        .as_str()
        .and_then(|at| crate::domain::timestamp::parse_utc(at).ok())
        .is_some_and(|at| at <= chrono::Utc::now());
    let state = match (k["revoked_at"].as_str(), k["expires_at"].as_str()) {
        (Some(at), _) => format!("REVOKED {at}"),
        (None, Some(at)) if expired => format!("EXPIRED {at}"),
        (None, Some(at)) => format!("active, expires {at}"),
        (None, None) => "active, no expiry".into(),
    };
    [
        k["id"].as_str().unwrap_or("?").to_owned(),
        k["account_id"].as_str().unwrap_or("?").to_owned(),
        permissions.join(","),
        state,
        k["description"].as_str().unwrap_or("").to_owned(),
    ]
}

/// `--expires`: a plain date (its first instant, UTC) or an RFC 3339 UTC
/// time, as the RFC 3339 text the admin API takes.
pub fn parse_expiry(raw: &str) -> Result<String, String> {
    if let Ok(date) = chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        let start = date
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc();
        return Ok(crate::domain::timestamp::format(&start));
    }
    crate::domain::timestamp::parse_utc(raw)
        .map(|at| crate::domain::timestamp::format(&at))
        .map_err(|message| {
            format!(
                "give a date like 2027-01-01 or a UTC time like 2027-01-01T12:00:00Z ({message})"
            )
        })
}

pub async fn accounts(command: AccountsCommand) -> anyhow::Result<()> {
    match command {
        AccountsCommand::Create {
            name,
            plan,
            requests_per_hour,
            max_streams,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let body = json!({"name": name, "plan": plan.as_str(), "requests_per_hour": requests_per_hour, "max_streams": max_streams});
            let account = client
                .call(reqwest::Method::POST, "/accounts", Some(body))
                .await?;
            client.print(&account, |a| {
                format!("Created account {}", describe_account(a))
            });
        }
        AccountsCommand::SetPlan {
            account,
            plan,
            requests_per_hour,
            max_streams,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let body = json!({"plan": plan.as_str(), "requests_per_hour": requests_per_hour, "max_streams": max_streams});
            let path = format!("/accounts/{account}/plan");
            let account = client.call(reqwest::Method::PUT, &path, Some(body)).await?;
            client.print(&account, |a| {
                format!("Changed plan: {}", describe_account(a))
            });
        }
        AccountsCommand::Get {
            account,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}", urlencode(&account));
            let account = client.call(reqwest::Method::GET, &path, None).await?;
            client.print(&account, describe_account);
        }
        AccountsCommand::Disable {
            account,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}/disable", urlencode(&account));
            let account = client.call(reqwest::Method::POST, &path, None).await?;
            client.print(&account, |a| {
                format!(
                    "Disabled {}
Its keys are refused from now on; its data is kept.",
                    describe_account(a)
                )
            });
        }
        AccountsCommand::Enable {
            account,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}/enable", urlencode(&account));
            let account = client.call(reqwest::Method::POST, &path, None).await?;
            client.print(&account, |a| format!("Enabled {}", describe_account(a)));
        }
        AccountsCommand::List { connection } => {
            let client = AdminClient::connect(&connection)?;
            let data = client.call(reqwest::Method::GET, "/accounts", None).await?;
            client.print(&data, |d| {
                let lines: Vec<String> = d["accounts"]
                    .as_array()
                    .map(|all| all.iter().map(describe_account).collect())
                    .unwrap_or_default();
                if lines.is_empty() {
                    "No accounts.".into()
                } else {
                    lines.join("\n")
                }
            });
        }
    }
    Ok(())
}

pub async fn keys(command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create {
            account,
            permissions,
            expires,
            description,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let permissions: Vec<String> = permissions
                .iter()
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect();
            let body = json!({
                "account_id": account,
                "permissions": permissions,
                "expires_at": expires,
                "description": description,
            });
            let key = client
                .call(reqwest::Method::POST, "/keys", Some(body))
                .await?;
            client.print(&key, |k| {
                format!(
                    "Created {}\n\nAPI key (shown once, store it now):\n\n    {}\n",
                    describe_key(k),
                    k["key"].as_str().unwrap_or("?")
                )
            });
        }
        KeysCommand::Revoke { id, connection } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/keys/{}/revoke", urlencode(&key_id_of(&id)));
            let key = client.call(reqwest::Method::POST, &path, None).await?;
            client.print(&key, |k| format!("Revoked {}", describe_key(k)));
        }
        KeysCommand::List {
            account,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}/keys", urlencode(&account));
            let data = client.call(reqwest::Method::GET, &path, None).await?;
            client.print(&data, |d| {
                let lines: Vec<String> = d["keys"]
                    .as_array()
                    .map(|all| all.iter().map(key_row).collect())
                    .unwrap_or_default();
                if lines.is_empty() {
                    "No keys.".into()
                } else {
                    format!("{KEY_HEADER}\n{}", lines.join("\n"))
                }
            });
        }
    }
    Ok(())
}

pub async fn users(command: UsersCommand) -> anyhow::Result<()> {
    match command {
        UsersCommand::List {
            account,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}/users", urlencode(&account));
            let data = client.call(reqwest::Method::GET, &path, None).await?;
            client.print(&data, |d| {
                let lines: Vec<String> = d["users"]
                    .as_array()
                    .map(|all| all.iter().map(describe_user).collect())
                    .unwrap_or_default();
                if lines.is_empty() {
                    "No users.".into()
                } else {
                    lines.join("\n")
                }
            });
        }
        UsersCommand::Create {
            account,
            email,
            public_url,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let path = format!("/accounts/{}/users", urlencode(&account));
            let body = json!({ "email": email });
            let mut created = client
                .call(reqwest::Method::POST, &path, Some(body))
                .await?;
            created["link"] = json!(whole_link(&created, public_url.as_deref()));
            client.print(&created, |c| {
                format!(
                    "One-time link for {} to join account {} and choose a password \
                     (until {}; hand it over yourself):\n\n    {}\n",
                    c["email"].as_str().unwrap_or("?"),
                    c["account_id"].as_str().unwrap_or("?"),
                    c["expires_at"].as_str().unwrap_or("?"),
                    c["link"].as_str().unwrap_or("?"),
                )
            });
        }
        UsersCommand::ResetPassword {
            email,
            public_url,
            connection,
        } => {
            let client = AdminClient::connect(&connection)?;
            let body = json!({ "email": email });
            let mut reset = client
                .call(reqwest::Method::POST, "/users/reset-password", Some(body))
                .await?;
            reset["link"] = json!(whole_link(&reset, public_url.as_deref()));
            client.print(&reset, |r| {
                format!(
                    "Reset the password of {}; their sessions have ended.\n\n\
                     One-time link to choose a new password (until {}; hand it over \
                     yourself):\n\n    {}\n",
                    describe_user(&r["user"]),
                    r["expires_at"].as_str().unwrap_or("?"),
                    r["link"].as_str().unwrap_or("?"),
                )
            });
        }
    }
    Ok(())
}

/// A one-time link as a person opens it: on `--public-url` when given, else
/// as the server built it (its `--public-url`, or its API listener); a server
/// behind a TLS proxy without one gives only the path, said as such.
fn whole_link(answer: &Value, public_url: Option<&str>) -> String {
    let path = answer["link_path"].as_str().unwrap_or("?");
    match (public_url, answer["link"].as_str()) {
        (Some(base), _) => format!("{}{path}", base.trim_end_matches('/')),
        (None, Some(link)) => link.to_owned(),
        (None, None) => {
            format!("{path} (after the address your TLS proxy serves; or add --public-url)")
        }
    }
}

fn describe_user(u: &Value) -> String {
    format!(
        "{}  {}  account={}  since {}",
        u["id"].as_str().unwrap_or("?"),
        u["email"].as_str().unwrap_or("?"),
        u["account_id"].as_str().unwrap_or("?"),
        u["created_at"].as_str().unwrap_or("?"),
    )
}

/// Ids are plain ASCII, but a mistyped argument must not change the path.
fn urlencode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
