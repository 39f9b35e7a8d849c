//! The fake ARM's check of request bodies against the Azure REST API specification's own schema
//! (`tests/fixtures/spec`, an extract of Microsoft.Compute 2024-07-01: which definitions, from
//! which commit, is in `tests/fixtures/README.md`).
//!
//! Why a small checker and not the `jsonschema` crate: the specification is Swagger 2.0, not
//! JSON Schema — its `$ref`s cross files by relative path (`../../../common-types/v1/…`), enums
//! carry `x-ms-enum`, properties carry `readOnly` — and the part of it a VM body reaches uses
//! only `$ref`, `allOf`, `properties`, `additionalProperties`, `required`, `type`, `format`
//! (int32/int64), `items`, `enum` and `readOnly`. That subset is a hundred lines here, with no
//! dependency, where the crate would bring its regex and URL stacks and still need a custom
//! resolver for the spec's file layout. What ARM does beyond that subset is made explicit:
//! - a member the schema does not name is refused, as Compute refuses it ("Could not find
//!   member …", Azure/azure-rest-api-specs issue #286);
//! - `null` is taken as absent (ARM's deserializer does so; `azure_mgmt_compute` sends
//!   `timeCreated: null`);
//! - a `readOnly` property is not checked (it is response-only; ARM ignores it in a request);
//! - enums are enforced for requests whatever `modelAsString` says (that flag tells clients to
//!   accept new values in *responses*), except `hardwareProfile.vmSize`, whose enum the spec
//!   itself calls deprecated: sizes come from the resource SKU list, which `quota` checks.
//!
//! A definition the extract lacks is an error of its own (`SchemaNotExtracted`), so that a body
//! pvfs starts sending is never passed unchecked: copy the definition from the spec.

use serde_json::Value;
use std::collections::BTreeMap;

/// The extract, by path below `tests/fixtures/spec` (the specification's own layout below
/// `specification/compute/resource-manager/`, so that its relative `$ref`s resolve as written).
const FILES: &[(&str, &str)] = &[
    (
        "Microsoft.Compute/ComputeRP/stable/2024-07-01/virtualMachine.json",
        include_str!(
            "../../tests/fixtures/spec/Microsoft.Compute/ComputeRP/stable/2024-07-01/virtualMachine.json"
        ),
    ),
    (
        "Microsoft.Compute/ComputeRP/stable/2024-07-01/computeRPCommon.json",
        include_str!(
            "../../tests/fixtures/spec/Microsoft.Compute/ComputeRP/stable/2024-07-01/computeRPCommon.json"
        ),
    ),
    (
        "Microsoft.Compute/common-types/v1/common.json",
        include_str!("../../tests/fixtures/spec/Microsoft.Compute/common-types/v1/common.json"),
    ),
];

/// The file holding the `VirtualMachine` definition, the body of `VirtualMachines_CreateOrUpdate`.
pub const VIRTUAL_MACHINE: &str = "Microsoft.Compute/ComputeRP/stable/2024-07-01/virtualMachine.json";

/// One way a body breaks the schema, as ARM's error shape carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// ARM's code: `InvalidParameter` for a missing required property or a value outside an
    /// enum, `InvalidRequestContent` for what does not deserialize (a wrong type, an unknown
    /// member); `SchemaNotExtracted` is the fake's own.
    pub code: &'static str,
    pub message: String,
    /// The JSON path of the offending value (`properties.storageProfile.dataDisks[0].lun`).
    pub target: String,
}

/// The specification's files, parsed.
pub struct Spec {
    files: BTreeMap<&'static str, Value>,
}

impl Spec {
    pub fn compute_2024_07_01() -> Spec {
        let files = FILES
            .iter()
            .map(|(path, text)| (*path, serde_json::from_str(text).expect("the spec's files are JSON")))
            .collect();
        Spec { files }
    }

    /// Every violation of `definition` (of `file`) by `body`, in document order.
    pub fn check(&self, file: &str, definition: &str, body: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        let reference = format!("#/definitions/{definition}");
        self.value(file, &serde_json::json!({ "$ref": reference }), body, "", &mut out);
        out
    }

    /// `(file, schema, definition name)` that `reference` names from `file`.
    fn resolve(&self, file: &str, reference: &str) -> Result<(String, &Value, String), String> {
        let (path, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if path.is_empty() { file.to_string() } else { join(file, path) };
        let name = pointer.rsplit('/').next().unwrap_or_default().to_string();
        let schema = self
            .files
            .get(target.as_str())
            .and_then(|doc| doc.pointer(pointer))
            .ok_or_else(|| format!("{target}#{pointer}"))?;
        Ok((target, schema, name))
    }

    /// Checks `value` at `path` against `schema`, found in `file`.
    fn value(&self, file: &str, schema: &Value, value: &Value, path: &str, out: &mut Vec<Violation>) {
        if value.is_null() || schema["readOnly"] == Value::Bool(true) {
            return;
        }
        if let Some(reference) = schema["$ref"].as_str() {
            match self.resolve(file, reference) {
                Ok((file, schema, _)) => self.value(&file, schema, value, path, out),
                Err(missing) => out.push(not_extracted(&missing, path)),
            }
            return;
        }
        let kind = schema["type"].as_str().unwrap_or(
            if schema.get("properties").is_some() || schema.get("allOf").is_some() { "object" } else { "" },
        );
        let fits = match kind {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => match schema["format"].as_str() {
                Some("int32") => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
                _ => value.is_i64() || value.is_u64(),
            },
            "number" => value.is_number(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !fits {
            out.push(Violation {
                code: "InvalidRequestContent",
                message: format!(
                    "The request content was invalid and could not be deserialized: 'Error converting value {value} to type '{kind}{}'. Path '{path}'.'",
                    schema["format"].as_str().map(|f| format!(" ({f})")).unwrap_or_default()
                ),
                target: path.to_string(),
            });
            return;
        }
        if let (Some(allowed), Some(given)) = (schema["enum"].as_array(), value.as_str()) {
            let deprecated = schema["x-ms-enum"]["name"] == "VirtualMachineSizeTypes";
            if !deprecated && !allowed.iter().any(|a| a.as_str() == Some(given)) {
                let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
                out.push(Violation {
                    code: "InvalidParameter",
                    message: format!(
                        "The value '{given}' of parameter '{path}' is not allowed. Allowed values are: {}.",
                        names.join(", ")
                    ),
                    target: path.to_string(),
                });
            }
        }
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.value(file, &schema["items"], item, &format!("{path}[{i}]"), out);
                }
            }
            Value::Object(members) if kind == "object" => self.object(file, schema, members, path, out),
            _ => {}
        }
    }

    /// An object against `schema`: its `allOf` parents' properties and requirements with its
    /// own; every member must be one of them (or fit `additionalProperties`).
    fn object(
        &self,
        file: &str,
        schema: &Value,
        members: &serde_json::Map<String, Value>,
        path: &str,
        out: &mut Vec<Violation>,
    ) {
        // (file, name, property schema), and the required names, over the allOf chain.
        let mut properties: Vec<(String, String, &Value)> = Vec::new();
        let mut required: Vec<String> = Vec::new();
        let mut additional: Option<(String, &Value)> = None;
        let mut stack = vec![(file.to_string(), schema)];
        while let Some((file, schema)) = stack.pop() {
            for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                properties.push((file.clone(), name.clone(), property));
            }
            required.extend(
                schema["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(String::from)),
            );
            if schema["additionalProperties"].is_object() {
                additional = Some((file.clone(), &schema["additionalProperties"]));
            }
            for parent in schema["allOf"].as_array().into_iter().flatten() {
                match parent["$ref"].as_str().map(|r| self.resolve(&file, r)) {
                    Some(Ok((parent_file, parent, _))) => stack.push((parent_file, parent)),
                    Some(Err(missing)) => out.push(not_extracted(&missing, path)),
                    None => stack.push((file.clone(), parent)),
                }
            }
        }
        let at = |name: &str| if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
        for name in &required {
            if members.get(name).is_none_or(Value::is_null) {
                out.push(Violation {
                    code: "InvalidParameter",
                    message: format!("Required parameter '{}' is missing (null).", at(name)),
                    target: at(name),
                });
            }
        }
        for (name, member) in members {
            match properties.iter().find(|(_, n, _)| n == name) {
                Some((file, _, property)) => self.value(file, property, member, &at(name), out),
                None => match &additional {
                    Some((file, schema)) => self.value(file, schema, member, &at(name), out),
                    None => out.push(Violation {
                        code: "InvalidRequestContent",
                        message: format!(
                            "The request content was invalid and could not be deserialized: 'Could not find member '{name}' on object at '{}'. Path '{}'.'",
                            if path.is_empty() { "(body)" } else { path },
                            at(name)
                        ),
                        target: at(name),
                    }),
                },
            }
        }
    }
}

fn not_extracted(missing: &str, path: &str) -> Violation {
    Violation {
        code: "SchemaNotExtracted",
        message: format!(
            "'{path}' needs {missing}, which the tests' extract of the specification lacks: copy that definition from \
             Azure/azure-rest-api-specs into tests/fixtures/spec (tests/fixtures/README.md)"
        ),
        target: path.to_string(),
    }
}

/// `relative` (`./x.json`, `../../../common-types/v1/common.json`) from the directory of `file`.
fn join(file: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = file.split('/').collect();
    parts.pop();
    for segment in relative.split('/') {
        match segment {
            "." | "" => {}
            ".." => drop(parts.pop()),
            other => parts.push(other),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn example_request(text: &str) -> Value {
        let v: Value = serde_json::from_str(text).unwrap();
        v["parameters"]["parameters"].clone()
    }

    fn check(body: &Value) -> Vec<String> {
        Spec::compute_2024_07_01()
            .check(VIRTUAL_MACHINE, "VirtualMachine", body)
            .into_iter()
            .map(|v| format!("{} {}: {}", v.code, v.target, v.message))
            .collect()
    }

    #[test]
    fn relative_references_resolve_as_in_the_specification() {
        assert_eq!(
            join(VIRTUAL_MACHINE, "../../../common-types/v1/common.json"),
            "Microsoft.Compute/common-types/v1/common.json"
        );
        assert_eq!(
            join(VIRTUAL_MACHINE, "./computeRPCommon.json"),
            "Microsoft.Compute/ComputeRP/stable/2024-07-01/computeRPCommon.json"
        );
    }

    #[test]
    fn the_specifications_own_example_requests_pass() {
        for text in [
            include_str!(
                "../../tests/fixtures/VirtualMachine_Create_WithNetworkInterfaceConfigurationDnsSettings.json"
            ),
            include_str!("../../tests/fixtures/VirtualMachine_Create_WithSshAuthentication.json"),
        ] {
            assert_eq!(check(&example_request(text)), Vec::<String>::new());
        }
    }

    #[test]
    fn what_arm_would_refuse_is_named_with_its_path() {
        let mut body = example_request(include_str!(
            "../../tests/fixtures/VirtualMachine_Create_WithSshAuthentication.json"
        ));
        body.as_object_mut().unwrap().remove("location");
        let props = &mut body["properties"];
        props["storageProfile"]["osDisk"].as_object_mut().unwrap().remove("createOption");
        props["storageProfile"]["osDisk"]["caching"] = json!("WriteBack");
        props["storageProfile"]["dataDisks"] = json!([{ "lun": "0", "createOption": "Empty", "managedDisk": { "storageAccountType": "Premium_LSR" } }]);
        props["osProfile"]["linuxConfiguration"]["disablePasswordAuthentication"] = json!("yes");
        props["osProfile"]["linuxConfiguration"]["sshKeys"] = json!([]);
        // Not checked: read-only (provisioningState), null (timeCreated), a size outside the
        // deprecated enum.
        props["provisioningState"] = json!(42);
        props["timeCreated"] = Value::Null;
        props["hardwareProfile"]["vmSize"] = json!("Standard_HB120rs_v3");
        // Not in the extract: refused until its definition is copied.
        props["diagnosticsProfile"] = json!({ "bootDiagnostics": { "enabled": true } });
        expect_test::expect![[r#"
            [
                "InvalidParameter location: Required parameter 'location' is missing (null).",
                "SchemaNotExtracted properties.diagnosticsProfile: 'properties.diagnosticsProfile' needs Microsoft.Compute/ComputeRP/stable/2024-07-01/computeRPCommon.json#/definitions/DiagnosticsProfile, which the tests' extract of the specification lacks: copy that definition from Azure/azure-rest-api-specs into tests/fixtures/spec (tests/fixtures/README.md)",
                "InvalidRequestContent properties.osProfile.linuxConfiguration.disablePasswordAuthentication: The request content was invalid and could not be deserialized: 'Error converting value \"yes\" to type 'boolean'. Path 'properties.osProfile.linuxConfiguration.disablePasswordAuthentication'.'",
                "InvalidRequestContent properties.osProfile.linuxConfiguration.sshKeys: The request content was invalid and could not be deserialized: 'Could not find member 'sshKeys' on object at 'properties.osProfile.linuxConfiguration'. Path 'properties.osProfile.linuxConfiguration.sshKeys'.'",
                "InvalidRequestContent properties.storageProfile.dataDisks[0].lun: The request content was invalid and could not be deserialized: 'Error converting value \"0\" to type 'integer (int32)'. Path 'properties.storageProfile.dataDisks[0].lun'.'",
                "InvalidParameter properties.storageProfile.dataDisks[0].managedDisk.storageAccountType: The value 'Premium_LSR' of parameter 'properties.storageProfile.dataDisks[0].managedDisk.storageAccountType' is not allowed. Allowed values are: Standard_LRS, Premium_LRS, StandardSSD_LRS, UltraSSD_LRS, Premium_ZRS, StandardSSD_ZRS, PremiumV2_LRS.",
                "InvalidParameter properties.storageProfile.osDisk.createOption: Required parameter 'properties.storageProfile.osDisk.createOption' is missing (null).",
                "InvalidParameter properties.storageProfile.osDisk.caching: The value 'WriteBack' of parameter 'properties.storageProfile.osDisk.caching' is not allowed. Allowed values are: None, ReadOnly, ReadWrite.",
            ]
        "#]]
        .assert_debug_eq(&check(&body));
    }
}
