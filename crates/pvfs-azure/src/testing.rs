//! A fake Azure Resource Manager on loopback HTTPS, for tests (feature `testing`).
//!
//! It answers with the response bodies of the REST API specification's own examples
//! (`tests/fixtures`, sources in `tests/fixtures/README.md`), with only what identifies the
//! resource replaced, and follows the ARM protocols: PUT answers 201 with an
//! `Azure-AsyncOperation` URL that reports `InProgress` a set number of times before its end;
//! DELETE answers 202 with a `Location` URL. Faults can be queued per VM: a 429 with
//! `Retry-After`, a 409, an operation that ends `Failed`. Every request is recorded with its
//! body, so tests assert what the client sent.
//!
//! Every PUT body is checked as ARM checks it, so that a body ARM would refuse fails the tests:
//! against the REST specification's own schema for 2024-07-01 ([`schema`]), then by the rules
//! ARM applies beyond the schema that pvfs depends on (Ultra Disks need `ultraSSDEnabled`; an
//! existing VM's OS profile cannot change). Each refusal is answered in ARM's error shape.

pub mod schema;

use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The SSH public key of the tests' cluster files (and of the VMs [`FakeArm::add_vm`] makes).
pub const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFd4CT7eOzNl2EaLeu/nR7gzgtAahQDYyjNE12f63sLw pvfs@test";

/// The subscription the fake ARM serves (the resource group is `rg`).
pub const SUBSCRIPTION: &str = "00000000-0000-0000-0000-0000000000aa";

const CREATE: &str =
    include_str!("../tests/fixtures/VirtualMachine_Create_WithNetworkInterfaceConfigurationDnsSettings.json");
const GET: &str = include_str!("../tests/fixtures/VirtualMachine_Get.json");
const LIST: &str = include_str!("../tests/fixtures/VirtualMachine_List_MinimumSet_Gen.json");
const SKUS: &str = include_str!("../tests/fixtures/ListAvailableResourceSkusForARegion.json");
const USAGE: &str = include_str!("../tests/fixtures/Usage_List_MaximumSet_Gen.json");
const NIC: &str = include_str!("../tests/fixtures/NetworkInterfaceGet.json");
const DELETE: &str = include_str!("../tests/fixtures/VirtualMachine_Delete_Force.json");

/// A fault the next PUT of a VM meets.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 Too Many Requests with this `Retry-After` (seconds); the retried PUT goes through.
    Throttle { retry_after: u64 },
    /// 409 Conflict with this ARM error code and message.
    Conflict { code: String, message: String },
    /// The PUT is accepted, and its operation ends `Failed` with this error.
    FailOperation { code: String, message: String },
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub body: Option<Value>,
}

struct Operation {
    remaining: u32,
    vm: String,
    failure: Option<(String, String)>,
    delete: bool,
}

/// What the fake ARM holds.
pub struct World {
    /// The resource group's VMs by name, as GET answers them.
    pub vms: BTreeMap<String, Value>,
    /// Every request, in arrival order.
    pub requests: Vec<Recorded>,
    /// The region's quotas: (name, current, limit).
    pub usages: Vec<(String, i64, i64)>,
    /// Faults by VM name, met by its PUTs in order.
    pub faults: BTreeMap<String, VecDeque<Fault>>,
    /// VM sizes offered besides the example's (`offer_size`).
    pub extra_skus: Vec<Value>,
    /// How many times an operation answers `InProgress` before its end.
    pub in_progress: u32,
    /// The `Retry-After` of those answers (seconds).
    pub poll_retry_after: u64,
    operations: BTreeMap<String, Operation>,
    next: u32,
    /// The REST specification's schema every PUT body is checked against.
    spec: schema::Spec,
}

impl World {
    fn new() -> World {
        World {
            vms: BTreeMap::new(),
            requests: Vec::new(),
            usages: Vec::new(),
            faults: BTreeMap::new(),
            extra_skus: Vec::new(),
            in_progress: 0,
            poll_retry_after: 0,
            operations: BTreeMap::new(),
            next: 0,
            spec: schema::Spec::compute_2024_07_01(),
        }
    }
}

/// The fake ARM: its URL, the PEM of the CA its certificate chains to, and its world.
pub struct FakeArm {
    pub url: azure_core::Url,
    pub ca_pem: Vec<u8>,
    pub world: Arc<Mutex<World>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeArm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn example(text: &str, status: &str) -> Value {
    let v: Value = serde_json::from_str(text).expect("fixtures are JSON");
    v["responses"][status]["body"].clone()
}

impl FakeArm {
    /// Starts the server on 127.0.0.1 (an ephemeral port) with a fresh CA.
    pub async fn start() -> FakeArm {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("CA");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().expect("key");
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("params")
            .signed_by(&key, &issuer)
            .expect("leaf");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let url = azure_core::Url::parse(&format!("https://127.0.0.1:{port}")).expect("url");
        let world = Arc::new(Mutex::new(World::new()));
        let server = tokio::spawn({
            let world = world.clone();
            let base = url.clone();
            async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { continue };
                    let acceptor = acceptor.clone();
                    let world = world.clone();
                    let base = base.clone();
                    tokio::spawn(async move {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            let _ = serve(tls, &world, &base).await;
                        }
                    });
                }
            }
        });
        FakeArm { url, ca_pem: ca.pem().into_bytes(), world, server }
    }

    /// Offers VM size `name` (of quota family `family`, `vcpus` each) in `location`'s zones 1 to
    /// 3, shaped as the SKU example's first entry (the seed's sizes are not in the example), with
    /// `capabilities` (`PremiumIO`, `MaxDataDiskCount`, …) set over the example's, and Ultra
    /// Disks available in `ultra_zones` (the example's `zoneDetails` shape).
    pub fn offer_size(
        &self,
        name: &str,
        family: &str,
        vcpus: u32,
        location: &str,
        capabilities: &[(&str, &str)],
        ultra_zones: &[&str],
    ) {
        let mut sku = example(SKUS, "200")["value"][0].clone();
        sku["name"] = json!(name);
        sku["family"] = json!(family);
        sku["size"] = json!(name.trim_start_matches("Standard_"));
        sku["locations"] = json!([location]);
        sku["locationInfo"] = json!([{ "location": location, "zones": ["1", "2", "3"] }]);
        if !ultra_zones.is_empty() {
            sku["locationInfo"][0]["zoneDetails"] = json!([{
                "name": ultra_zones,
                "capabilities": [{ "name": "UltraSSDAvailable", "value": "True" }],
            }]);
        }
        let vcpus = vcpus.to_string();
        let set = [("vCPUs", vcpus.as_str()), ("vCPUsAvailable", vcpus.as_str())];
        let list = sku["capabilities"].as_array_mut().expect("the example lists capabilities");
        for (key, value) in set.iter().chain(capabilities) {
            match list.iter_mut().find(|c| c["name"] == *key) {
                Some(c) => c["value"] = json!(value),
                None => list.push(json!({ "name": key, "value": value })),
            }
        }
        self.world.lock().expect("the fake's world").extra_skus.push(sku);
    }

    /// The VM is as `provision` would have made it for the tests' cluster file: administrator
    /// `pvfs` with [`SSH_KEY`].
    pub fn add_vm(&self, name: &str, tags: Value, size: &str, data_disks: u32) {
        let mut world = self.world.lock().expect("the fake's world");
        let vm = stored_vm(
            &mut world,
            name,
            &json!({
                "location": "westus",
                "tags": tags,
                "properties": {
                    "hardwareProfile": { "vmSize": size },
                    "storageProfile": {
                        "imageReference": { "publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest" },
                        "dataDisks": (0..data_disks).map(|lun| json!({"lun": lun, "createOption": "Empty", "diskSizeGB": 1024, "caching": "None", "managedDisk": {"storageAccountType": "Premium_LRS"}})).collect::<Vec<_>>(),
                    },
                    "osProfile": {
                        "computerName": name,
                        "adminUsername": "pvfs",
                        "linuxConfiguration": {
                            "disablePasswordAuthentication": true,
                            "ssh": { "publicKeys": [{ "path": "/home/pvfs/.ssh/authorized_keys", "keyData": SSH_KEY }] },
                        },
                    },
                },
            }),
            "Succeeded",
        );
        world.vms.insert(name.to_string(), vm);
    }

    /// The recorded requests, without the polls (GETs of operations).
    pub fn requests(&self) -> Vec<Recorded> {
        self.world.lock().expect("the fake's world").requests.clone()
    }
}

/// The resource path of the subscription's region operations.
fn op_path(location: &str, id: &str) -> String {
    format!("/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/locations/{location}/operations/{id}")
}

/// A VM as GET answers it: the `VirtualMachines_Get` example with the request's identity.
fn stored_vm(world: &mut World, name: &str, put: &Value, state: &str) -> Value {
    let mut vm = example(GET, "200");
    let props = &put["properties"];
    let id = format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/{name}"
    );
    vm["name"] = json!(name);
    vm["id"] = json!(id);
    vm["location"] = put["location"].clone();
    vm["tags"] = put["tags"].clone();
    match put.get("zones") {
        Some(z) => vm["zones"] = z.clone(),
        None => drop(vm.as_object_mut().map(|o| o.remove("zones"))),
    }
    vm["properties"]["hardwareProfile"] = props["hardwareProfile"].clone();
    // The OS profile as created, as the `VirtualMachines_CreateOrUpdate` example with SSH keys
    // answers it: without the password or custom data ARM never returns, with `secrets: []`.
    match props.get("osProfile").filter(|p| p.is_object()) {
        Some(profile) => {
            let mut profile = profile.clone();
            if let Some(p) = profile.as_object_mut() {
                p.remove("adminPassword");
                p.remove("customData");
                p.entry("secrets").or_insert(json!([]));
            }
            vm["properties"]["osProfile"] = profile;
        }
        None => drop(vm["properties"].as_object_mut().map(|p| p.remove("osProfile"))),
    }
    match props.get("additionalCapabilities") {
        Some(c) => vm["properties"]["additionalCapabilities"] = c.clone(),
        None => drop(vm["properties"].as_object_mut().map(|p| p.remove("additionalCapabilities"))),
    }
    vm["properties"]["storageProfile"]["imageReference"] = props["storageProfile"]["imageReference"].clone();
    let disks: Vec<Value> = props["storageProfile"]["dataDisks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut d| {
            let disk_name =
                d["name"].as_str().map(str::to_string).unwrap_or_else(|| format!("{name}-disk{}", d["lun"]));
            d["managedDisk"]["id"] = json!(format!(
                "/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Compute/disks/{disk_name}"
            ));
            d
        })
        .collect();
    vm["properties"]["storageProfile"]["dataDisks"] = json!(disks);
    world.next += 1;
    vm["properties"]["networkProfile"] = json!({ "networkInterfaces": [{
        "id": format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/{name}-nic"),
        "properties": { "primary": true },
    }] });
    vm["properties"]["provisioningState"] = json!(state);
    vm
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

fn reply(status: u16, body: Value) -> Reply {
    Reply { status, headers: vec![], body: Some(body) }
}

fn arm_error(status: u16, code: &str, message: &str) -> Reply {
    reply(status, json!({ "error": { "code": code, "message": message } }))
}

/// ARM's `CloudError` for a refused body: the first violation, with every one in `details`
/// (`ApiError` of the spec's common types).
fn refuse(status: u16, first: &schema::Violation, all: &[schema::Violation]) -> Reply {
    let details: Vec<Value> =
        all.iter().map(|v| json!({ "code": v.code, "target": v.target, "message": v.message })).collect();
    reply(
        status,
        json!({ "error": { "code": first.code, "target": first.target, "message": first.message, "details": details } }),
    )
}

/// One request → one answer; the connection is closed after it (`Connection: close`).
async fn serve<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    world: &Mutex<World>,
    base: &azure_core::Url,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let length: usize = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Option<Value> = serde_json::from_slice(&buf[head_end..]).ok();
    let answer = {
        let mut world = world.lock().expect("the fake's world");
        world.requests.push(Recorded { method: method.clone(), target: target.clone(), body: body.clone() });
        route(&mut world, base, &method, &target, body)
    };
    let text = answer.body.map(|b| b.to_string()).unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        answer.status,
        text.len()
    );
    for (k, v) in answer.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&text);
    stream.write_all(out.as_bytes()).await?;
    stream.shutdown().await
}

fn route(
    world: &mut World,
    base: &azure_core::Url,
    method: &str,
    target: &str,
    body: Option<Value>,
) -> Reply {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let vm_prefix = [
        "subscriptions",
        SUBSCRIPTION,
        "resourceGroups",
        "rg",
        "providers",
        "Microsoft.Compute",
        "virtualMachines",
    ];
    match (method, parts.as_slice()) {
        ("GET", p) if p == vm_prefix => {
            // The `VirtualMachines_List` example's shape: `value`, no next page.
            let mut list = example(LIST, "200");
            list["value"] = json!(world.vms.values().cloned().collect::<Vec<_>>());
            reply(200, list)
        }
        (_, [.., "virtualMachines", name]) if parts.len() == 8 && parts[..7] == vm_prefix => {
            let name = name.to_string();
            match method {
                "GET" => match world.vms.get(&name) {
                    Some(vm) => reply(200, vm.clone()),
                    None => arm_error(
                        404,
                        "ResourceNotFound",
                        &format!(
                            "The Resource 'Microsoft.Compute/virtualMachines/{name}' under resource group 'rg' was not found."
                        ),
                    ),
                },
                "PUT" => put(world, base, &name, body.unwrap_or_default()),
                "DELETE" => {
                    if !world.vms.contains_key(&name) {
                        let _ = example(DELETE, "204");
                        return Reply { status: 204, headers: vec![], body: None };
                    }
                    world.next += 1;
                    let id = format!("op{}", world.next);
                    world.operations.insert(
                        id.clone(),
                        Operation { remaining: world.in_progress, vm: name, failure: None, delete: true },
                    );
                    let location = format!(
                        "{}{}?api-version=2024-07-01",
                        base.as_str().trim_end_matches('/'),
                        op_path("westus", &id).replace("/operations/", "/operationResults/")
                    );
                    Reply {
                        status: 202,
                        headers: vec![("Location".into(), location), ("Retry-After".into(), "0".into())],
                        body: None,
                    }
                }
                _ => arm_error(405, "MethodNotAllowed", method),
            }
        }
        (
            "GET",
            [
                "subscriptions",
                SUBSCRIPTION,
                "providers",
                "Microsoft.Compute",
                "locations",
                _,
                kind @ ("operations" | "operationResults"),
                id,
            ],
        ) => {
            let retry_after = world.poll_retry_after.to_string();
            let Some(op) = world.operations.get_mut(*id) else {
                return arm_error(404, "NotFound", "no such operation");
            };
            if op.remaining > 0 {
                op.remaining -= 1;
                let headers = vec![("Retry-After".into(), retry_after)];
                return if *kind == "operations" {
                    Reply { status: 200, headers, body: Some(json!({ "status": "InProgress" })) }
                } else {
                    Reply { status: 202, headers, body: None }
                };
            }
            let op = world.operations.remove(*id).expect("present");
            if op.delete {
                world.vms.remove(&op.vm);
                return Reply { status: 200, headers: vec![], body: None };
            }
            match op.failure {
                None => {
                    if let Some(vm) = world.vms.get_mut(&op.vm) {
                        vm["properties"]["provisioningState"] = json!("Succeeded");
                    }
                    reply(200, json!({ "status": "Succeeded" }))
                }
                Some((code, message)) => {
                    if let Some(vm) = world.vms.get_mut(&op.vm) {
                        vm["properties"]["provisioningState"] = json!("Failed");
                    }
                    reply(200, json!({ "status": "Failed", "error": { "code": code, "message": message } }))
                }
            }
        }
        ("GET", ["subscriptions", SUBSCRIPTION, "providers", "Microsoft.Compute", "skus"]) => {
            assert!(query.contains("api-version=2021-07-01"), "{query}");
            let mut skus = example(SKUS, "200");
            if let Some(list) = skus["value"].as_array_mut() {
                list.extend(world.extra_skus.iter().cloned());
            }
            reply(200, skus)
        }
        (
            "GET",
            ["subscriptions", SUBSCRIPTION, "providers", "Microsoft.Compute", "locations", _, "usages"],
        ) => {
            let shape = example(USAGE, "200")["value"][0].clone();
            let value: Vec<Value> = world
                .usages
                .iter()
                .map(|(name, current, limit)| {
                    let mut u = shape.clone();
                    u["name"] = json!({ "value": name, "localizedValue": name });
                    u["currentValue"] = json!(current);
                    u["limit"] = json!(limit);
                    u
                })
                .collect();
            reply(200, json!({ "value": value }))
        }
        (
            "GET",
            [
                "subscriptions",
                SUBSCRIPTION,
                "resourceGroups",
                "rg",
                "providers",
                "Microsoft.Network",
                "networkInterfaces",
                nic,
            ],
        ) => {
            assert!(query.contains("api-version=2024-05-01"), "{query}");
            let Some(index) = world.vms.keys().position(|vm| format!("{vm}-nic") == *nic) else {
                return arm_error(404, "NotFound", &format!("Resource {nic} not found."));
            };
            let mut body = example(NIC, "200");
            body["name"] = json!(nic);
            body["id"] = json!(path);
            body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"] =
                json!(format!("10.1.0.{}", index + 4));
            reply(200, body)
        }
        _ => arm_error(404, "NotFound", &format!("the fake ARM has no {method} {path}")),
    }
}

/// What ARM refuses that the schema cannot say, each as ARM answers it (the codes and messages
/// of ARM's answers quoted in tests/fixtures/README.md).
fn rules(existing: Option<&Value>, body: &Value) -> Option<Reply> {
    let props = &body["properties"];
    // The spec's AdditionalCapabilities.ultraSSDEnabled: "Managed disks with storage account type
    // UltraSSD_LRS can be added to a virtual machine … only if this property is enabled."
    let ultra = props["storageProfile"]["dataDisks"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|d| d["managedDisk"]["storageAccountType"] == "UltraSSD_LRS");
    if ultra && props["additionalCapabilities"]["ultraSSDEnabled"] != json!(true) {
        return Some(reply(
            400,
            json!({ "error": {
                "code": "InvalidParameter",
                "message": "StorageAccountType UltraSSD_LRS can be used only when additionalCapabilities.ultraSSDEnabled is set.",
                "target": "managedDisk.storageAccountType",
            } }),
        ));
    }
    // An existing VM's OS profile cannot change ("some of the settings cannot be changed once VM
    // is provisioned", the spec's OSProfile; computerName and adminUsername "cannot be updated
    // after the VM is created"): 409 PropertyChangeNotAllowed. Leaving the profile out of the
    // PUT of a VM that has one is refused here too — ARM does not document it either way, so
    // the fake takes the strict reading.
    let old = existing.map(|vm| &vm["properties"]["osProfile"]).filter(|p| p.is_object())?;
    let new = &props["osProfile"];
    let changed = if new.is_null() {
        Some("osProfile")
    } else {
        [
            ("computerName", "computerName"),
            ("adminUsername", "adminUsername"),
            (
                "linuxConfiguration.disablePasswordAuthentication",
                "/linuxConfiguration/disablePasswordAuthentication",
            ),
            ("linuxConfiguration.ssh.publicKeys", "/linuxConfiguration/ssh/publicKeys"),
        ]
        .into_iter()
        .find(|(_, pointer)| {
            let at = |v: &Value| {
                if pointer.starts_with('/') { v.pointer(pointer).cloned() } else { v.get(pointer).cloned() }
            };
            at(old) != at(new)
        })
        .map(|(name, _)| name)
    };
    changed.map(|property| {
        reply(
            409,
            json!({ "error": {
                "code": "PropertyChangeNotAllowed",
                "message": format!("Changing property '{property}' is not allowed."),
                "target": property,
            } }),
        )
    })
}

fn put(world: &mut World, base: &azure_core::Url, name: &str, body: Value) -> Reply {
    let fault = world.faults.get_mut(name).and_then(VecDeque::pop_front);
    let failure = match fault {
        Some(Fault::Throttle { retry_after }) => {
            let mut r = arm_error(429, "TooManyRequests", "The request is being throttled.");
            r.headers.push(("Retry-After".into(), retry_after.to_string()));
            return r;
        }
        Some(Fault::Conflict { code, message }) => return arm_error(409, &code, &message),
        Some(Fault::FailOperation { code, message }) => Some((code, message)),
        None => None,
    };
    // As ARM: a body the API version's schema refuses is answered 400 before anything is done.
    let violations = world.spec.check(schema::VIRTUAL_MACHINE, "VirtualMachine", &body);
    if let Some(first) = violations.first() {
        return refuse(400, first, &violations);
    }
    if let Some(refusal) = rules(world.vms.get(name), &body) {
        return refusal;
    }
    let existed = world.vms.contains_key(name);
    let vm = stored_vm(world, name, &body, "Creating");
    world.vms.insert(name.to_string(), vm.clone());
    world.next += 1;
    let id = format!("op{}", world.next);
    let location = body["location"].as_str().unwrap_or("westus").to_string();
    world.operations.insert(
        id.clone(),
        Operation { remaining: world.in_progress, vm: name.to_string(), failure, delete: false },
    );
    // The `VirtualMachines_CreateOrUpdate` example's answer, with this VM's identity.
    let mut answer = example(CREATE, if existed { "200" } else { "201" });
    answer["name"] = vm["name"].clone();
    answer["id"] = vm["id"].clone();
    answer["location"] = vm["location"].clone();
    answer["properties"]["hardwareProfile"] = vm["properties"]["hardwareProfile"].clone();
    answer["properties"]["networkProfile"] = vm["properties"]["networkProfile"].clone();
    let operation =
        format!("{}{}?api-version=2024-07-01", base.as_str().trim_end_matches('/'), op_path(&location, &id));
    Reply {
        status: if existed { 200 } else { 201 },
        headers: vec![("Azure-AsyncOperation".into(), operation), ("Retry-After".into(), "0".into())],
        body: Some(answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's own example request with SSH keys: a body ARM takes.
    fn example_body() -> Value {
        let v: Value = serde_json::from_str(include_str!(
            "../tests/fixtures/VirtualMachine_Create_WithSshAuthentication.json"
        ))
        .unwrap();
        v["parameters"]["parameters"].clone()
    }

    fn put_vm(world: &mut World, body: Value) -> (u16, Value) {
        let base = azure_core::Url::parse("https://127.0.0.1:1").unwrap();
        let reply = put(world, &base, "vm1", body);
        (reply.status, reply.body.unwrap_or_default())
    }

    #[test]
    fn ultra_disks_without_ultra_ssd_enabled_are_refused_as_arm_refuses_them() {
        let mut world = World::new();
        let mut body = example_body();
        body["properties"]["storageProfile"]["dataDisks"] = json!([{
            "lun": 0, "createOption": "Empty", "diskSizeGB": 1024,
            "managedDisk": { "storageAccountType": "UltraSSD_LRS" },
        }]);
        let (status, answer) = put_vm(&mut world, body.clone());
        assert_eq!(status, 400);
        assert_eq!(
            answer,
            json!({ "error": {
                "code": "InvalidParameter",
                "message": "StorageAccountType UltraSSD_LRS can be used only when additionalCapabilities.ultraSSDEnabled is set.",
                "target": "managedDisk.storageAccountType",
            } })
        );
        body["properties"]["additionalCapabilities"] = json!({ "ultraSSDEnabled": true });
        assert_eq!(put_vm(&mut world, body).0, 201);
    }

    #[test]
    fn an_existing_vms_os_profile_cannot_change() {
        let mut world = World::new();
        let body = example_body();
        assert_eq!(put_vm(&mut world, body.clone()).0, 201);
        // The same model again (a resize sends it so) is taken.
        let mut resized = body.clone();
        resized["properties"]["hardwareProfile"]["vmSize"] = json!("Standard_D2_v2");
        assert_eq!(put_vm(&mut world, resized.clone()).0, 200);
        let mut new_key = resized.clone();
        new_key["properties"]["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"] =
            json!(SSH_KEY);
        let (status, answer) = put_vm(&mut world, new_key);
        assert_eq!(status, 409);
        assert_eq!(
            answer,
            json!({ "error": {
                "code": "PropertyChangeNotAllowed",
                "message": "Changing property 'linuxConfiguration.ssh.publicKeys' is not allowed.",
                "target": "linuxConfiguration.ssh.publicKeys",
            } })
        );
        let mut without = resized;
        without["properties"].as_object_mut().unwrap().remove("osProfile");
        let (status, answer) = put_vm(&mut world, without);
        assert_eq!((status, &answer["error"]["target"]), (409, &json!("osProfile")));
    }

    #[test]
    fn a_body_missing_what_the_schema_requires_is_refused_with_every_violation() {
        let mut world = World::new();
        let mut body = example_body();
        body.as_object_mut().unwrap().remove("location");
        body["properties"]["storageProfile"]["osDisk"].as_object_mut().unwrap().remove("createOption");
        let (status, answer) = put_vm(&mut world, body);
        assert_eq!(status, 400);
        assert_eq!(answer["error"]["code"], "InvalidParameter");
        assert_eq!(answer["error"]["message"], "Required parameter 'location' is missing (null).");
        assert_eq!(answer["error"]["details"].as_array().unwrap().len(), 2, "{answer}");
        assert!(world.vms.is_empty());
    }
}
