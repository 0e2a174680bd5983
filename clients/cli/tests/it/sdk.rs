//! `make sdk` (scripts/sdk.sh) for every language it names, and what this machine can do
//! with each output: every client `.proto` (not the `internal.proto` files) has its files
//! in every language, under names no other file of that language has (C# types by
//! namespace, Objective-C's global class and enum names, the JVM's classes of Java and
//! Kotlin together); the Python modules import, and sign a guest in against `basra dev`
//! (sdk_python.py, grpcio); the TypeScript type-checks with the web client's compiler and
//! options. The Java output is compiled and played with by jvm_client.rs (clients/jvm).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::dev_process::DevProcess;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The languages `make sdk` names (Makefile, scripts/sdk.sh).
const LANGUAGES: [&str; 6] = ["java", "kotlin", "csharp", "objc", "python", "typescript"];

/// `scripts/sdk.sh OUT` with no language named (every one), once for the suite: OUT.
fn sdk() -> &'static Path {
    static OUT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let out = OUT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sdk");
        let run = Command::new(format!("{ROOT}/scripts/sdk.sh"))
            .arg(&out)
            .output()
            .map_err(|err| format!("scripts/sdk.sh: {err}"))?;
        let printed = String::from_utf8_lossy(&run.stdout);
        if !run.status.success() {
            return Err(format!(
                "make sdk failed (make deps installs protoc, its plugins and the web client's \
                 packages):\n{printed}\n{}",
                String::from_utf8_lossy(&run.stderr)
            ));
        }
        for language in LANGUAGES {
            let done = format!("sdk: {language} in {}", out.join(language).display());
            if !printed.contains(&done) {
                return Err(format!("no `{done}` in:\n{printed}"));
            }
        }
        Ok(out)
    });
    match out {
        Ok(out) => out,
        Err(err) => panic!("{err}"),
    }
}

/// A client `.proto`, as the generators name its outputs.
struct Proto {
    /// `basra/game/v1/admin.proto`.
    path: String,
    text: String,
}

impl Proto {
    /// Every `.proto` under proto/basra, sorted; `internal`: the `internal.proto` files
    /// (service to service) or the others (the client API).
    fn all(internal: bool) -> Vec<Proto> {
        let proto = Path::new(ROOT).join("proto");
        let mut protos: Vec<Proto> = files(&proto.join("basra"))
            .into_iter()
            .filter(|path| path.extension().is_some_and(|ext| ext == "proto"))
            .filter(|path| (path.file_name().unwrap() == "internal.proto") == internal)
            .map(|path| Proto {
                text: std::fs::read_to_string(&path).unwrap(),
                path: relative(&proto, &path),
            })
            .collect();
        protos.sort_by(|a, b| a.path.cmp(&b.path));
        assert!(!protos.is_empty());
        protos
    }

    /// `basra/game/v1`.
    fn dir(&self) -> &str {
        self.path.rsplit_once('/').unwrap().0
    }

    /// `admin`.
    fn stem(&self) -> &str {
        let name = self.path.rsplit('/').next().unwrap();
        name.strip_suffix(".proto").unwrap()
    }

    /// `Admin`, as protoc's C# and Objective-C generators spell the file's name.
    fn pascal(&self) -> String {
        self.stem()
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_uppercase().chain(chars).collect()
                })
            })
            .collect()
    }

    /// The value of `option NAME = "…";`.
    fn option(&self, name: &str) -> String {
        let start = format!("option {name} = \"");
        self.text
            .lines()
            .find_map(|line| line.strip_prefix(&start)?.strip_suffix("\";"))
            .unwrap_or_else(|| panic!("{}: no option {name}", self.path))
            .to_owned()
    }

    /// The files each language writes for this `.proto`, relative to its folder.
    fn outputs(&self, language: &str) -> Vec<String> {
        let (dir, stem, pascal) = (self.dir(), self.stem(), self.pascal());
        let java = self.option("java_package").replace('.', "/");
        let outer = self.option("java_outer_classname");
        match language {
            "java" => std::iter::once(format!("{java}/{outer}.java"))
                .chain(
                    self.text
                        .lines()
                        .filter_map(|line| line.strip_prefix("service ")?.split(' ').next())
                        .map(|service| format!("{java}/{service}Grpc.java")),
                )
                .collect(),
            "kotlin" => vec![format!("{java}/{outer}Kt.kt")],
            "csharp" => {
                let namespace = self.option("csharp_namespace");
                let below = namespace.strip_prefix("Basra.").expect("under Basra");
                vec![format!("{}/{pascal}.cs", below.replace('.', "/"))]
            }
            "objc" => vec![
                format!("{dir}/{pascal}.pbobjc.h"),
                format!("{dir}/{pascal}.pbobjc.m"),
            ],
            "python" => vec![
                format!("{dir}/{stem}_pb2.py"),
                format!("{dir}/{stem}_pb2.pyi"),
                format!("{dir}/{stem}_pb2_grpc.py"),
            ],
            "typescript" => vec![format!("{dir}/{stem}_pb.ts")],
            _ => unreachable!("{language}"),
        }
    }
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The names a language's code sees, each with the files declaring it: C#'s top-level
/// types by namespace, Objective-C's classes and enums (one global namespace: the prefixes
/// keep them apart), the JVM's classes (a path is a package and a class).
fn declared_names(language: &str, dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in files(dir) {
        let file = relative(dir, &path);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut declare = |name: String| names.entry(name).or_default().push(file.clone());
        match language {
            "csharp" => {
                let mut namespace = "";
                for line in text.lines() {
                    if let Some(rest) = line.strip_prefix("namespace ") {
                        namespace = rest.trim_end_matches(" {");
                    }
                    let declared = [
                        "public sealed partial class ",
                        "public static partial class ",
                        "public enum ",
                    ]
                    .iter()
                    .find_map(|start| line.strip_prefix("  ")?.strip_prefix(start));
                    if let Some(rest) = declared {
                        let name = rest.split([' ', ':']).next().unwrap();
                        declare(format!("{namespace}.{name}"));
                    }
                }
            }
            "objc" if file.ends_with(".h") => {
                for line in text.lines() {
                    let name = line
                        .strip_prefix("@interface ")
                        .or_else(|| line.strip_prefix("typedef GPB_ENUM("))
                        .map(|rest| rest.split([' ', ')', ':']).next().unwrap());
                    if let Some(name) = name {
                        declare(name.to_owned());
                    }
                }
            }
            "objc" => {}
            "java" | "kotlin" => declare(
                file.rsplit_once('.')
                    .unwrap()
                    .0
                    .replace('/', ".")
                    .to_owned(),
            ),
            _ => unreachable!("{language}"),
        }
    }
    names
}

#[test]
fn make_sdk_writes_every_client_proto_in_every_language_under_names_of_its_own() {
    let out = sdk();
    let (client, internal) = (Proto::all(false), Proto::all(true));
    for language in LANGUAGES {
        let dir = out.join(language);
        let written: Vec<String> = files(&dir).iter().map(|f| relative(&dir, f)).collect();
        for proto in &client {
            for file in proto.outputs(language) {
                assert!(
                    written.contains(&file),
                    "{language}: no {file} for {}; written: {written:?}",
                    proto.path
                );
            }
        }
        // The client API only: no app makes the services' calls to each other.
        for proto in &internal {
            for file in proto.outputs(language) {
                assert!(!written.contains(&file), "{language}: {file} is internal");
            }
        }
    }
    // Where a language puts every name in one space, each name once. (Python's modules
    // and TypeScript's are their paths: one file each.)
    let mut jvm = declared_names("java", &out.join("java"));
    for (name, files) in declared_names("kotlin", &out.join("kotlin")) {
        jvm.entry(name).or_default().extend(files);
    }
    for (language, names) in [
        ("java and kotlin", jvm),
        ("csharp", declared_names("csharp", &out.join("csharp"))),
        ("objc", declared_names("objc", &out.join("objc"))),
    ] {
        assert!(names.len() > 50, "{language}: {names:?}");
        let twice: Vec<_> = names.iter().filter(|(_, files)| files.len() > 1).collect();
        assert!(twice.is_empty(), "{language}: declared twice: {twice:?}");
    }
}

#[test]
fn the_python_sdk_imports_and_signs_a_guest_in_against_basra_dev() {
    let python = sdk().join("python");
    let dev = DevProcess::start(&[], &[]);
    let run = Command::new("python3")
        .arg(format!("{ROOT}/clients/cli/tests/it/sdk_python.py"))
        .arg(&python)
        .arg(dev.addr.to_string())
        .output()
        .expect("python3 runs");
    let printed = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the Python SDK failed (make deps installs python3-grpcio and python3-protobuf):\n\
         {printed}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let modules = files(&python)
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .count();
    assert_eq!(
        printed.matches("imported basra.").count(),
        modules,
        "{printed}"
    );
    assert!(printed.contains("ok: "), "{printed}");
}

#[test]
fn the_typescript_sdk_type_checks_with_the_web_clients_options() {
    let out = sdk();
    let web = Path::new(ROOT).join("clients/web");
    // The generated code imports @bufbuild/protobuf: the web client's copy, at the
    // version its lock file pins for protoc-gen-es (found from typescript/ upwards).
    let modules = out.join("node_modules");
    let _ = std::fs::remove_file(&modules);
    std::os::unix::fs::symlink(web.join("node_modules"), &modules).unwrap();
    let config = serde_json::json!({
        "extends": web.join("tsconfig.json"),
        "include": ["typescript"],
    });
    std::fs::write(out.join("tsconfig.json"), config.to_string()).unwrap();
    let check = Command::new(web.join("node_modules/.bin/tsc"))
        .arg("-p")
        .arg(out.join("tsconfig.json"))
        .output()
        .expect("the web client's tsc runs (npm ci --prefix clients/web)");
    assert!(
        check.status.success(),
        "tsc:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
