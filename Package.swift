// swift-tools-version: 6.1
import PackageDescription

/// Swift 6 hygiene shared by every target: internal imports unless re-exported on purpose.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

/// The server's own modules, in release builds: no dynamic exclusivity checks (about 5% of a
/// GET's instructions in scripts/profile; debug builds and tests keep them). Not on the library
/// products (Rocks, RESP, CairnClient, CairnStore), which other packages may depend on.
let serverSettings: [SwiftSetting] = strictSettings + [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "Cairn",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Rocks", targets: ["Rocks"]),
        .library(name: "RESP", targets: ["RESP"]),
        .library(name: "CairnClient", targets: ["CairnClient"]),
        .library(name: "CairnStore", targets: ["CairnStore"]),
        .executable(name: "cairn-example", targets: ["cairn-example"]),
        .executable(name: "cairn-client-bench", targets: ["cairn-client-bench"]),
        .executable(name: "cairn-store-bench", targets: ["cairn-store-bench"]),
        .executable(name: "cairnd", targets: ["cairnd"]),
        .executable(name: "cairn-cli", targets: ["cairn-cli"]),
    ],
    // TLS for CairnClient costs building BoringSSL (swift-nio-ssl), minutes on a small machine:
    // only a package that asks for it pays, with `traits: ["TLS"]` on its dependency on Cairn
    // (here: `swift build --traits TLS`; scripts/test enables it so the TLS tests run).
    traits: [
        .trait(
            name: "TLS",
            description: "CairnClientConfiguration.tls: connections over TLS through swift-nio-ssl (BoringSSL), re-exported as NIOSSL"
        )
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
    ],
    targets: [
        // RocksDB's C API: a modulemap and a header. On Linux, the release build of Debian's
        // RocksDB source that scripts/lib/native.sh makes once per machine (cairn-rocksdb.pc):
        // a static archive, so RocksDB's thread-local reads and its calls between its own
        // functions are direct, not through __tls_get_addr and the PLT; the compression
        // libraries stay shared. Elsewhere, the system's shared library (see Rocks).
        .systemLibrary(name: "CRocksDB", pkgConfig: "cairn-rocksdb"),
        // A pthread Mutex that ThreadSanitizer can see, for `-DCAIRN_TSAN` builds (scripts/sanitize
        // thread); empty otherwise. No dependencies.
        .target(name: "CairnSync", swiftSettings: serverSettings),
        // Links RocksDB through CRocksDB's pkg-config file on Linux; on macOS, the shared library.
        .target(
            name: "Rocks", dependencies: ["CRocksDB", "CairnSync"], swiftSettings: strictSettings,
            linkerSettings: [.linkedLibrary("rocksdb", .when(platforms: [.macOS]))]
        ),
        .target(name: "RESP", swiftSettings: strictSettings),
        // The client runs on SwiftNIO event loops; it depends on nothing else of the package but
        // RESP. NIOSSL only with the TLS trait (`#if TLS` in its sources).
        .target(
            name: "CairnClient",
            dependencies: [
                "RESP", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["TLS"])),
            ],
            swiftSettings: strictSettings
        ),
        // A newcomer's tour of the client, and the client throughput benchmark (scripts/bench-client).
        .executableTarget(name: "cairn-example", dependencies: ["CairnClient"], swiftSettings: strictSettings),
        .executableTarget(name: "cairn-client-bench", dependencies: ["CairnClient"], swiftSettings: strictSettings),
        // Codable object store over the client: unit of work, indexes, relationships, full text,
        // versioning, encryption, named roots, typed defaults (docs/store.md).
        .target(
            name: "CairnStore",
            dependencies: [
                "CairnClient", "RESP", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            // A session is not Sendable: its async methods run on the caller's actor (SE-0461),
            // so a session works from the main actor as well as from any task.
            swiftSettings: strictSettings + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        // The object-store benchmark (scripts/bench-store).
        .executableTarget(name: "cairn-store-bench", dependencies: ["CairnStore", "CairnClient"], swiftSettings: strictSettings),
        .target(
            name: "CairnEngine",
            dependencies: [
                "Rocks", "RESP", "CLua", "CMalloc", "CairnSync", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: serverSettings
        ),
        .target(
            name: "CairnServer",
            dependencies: ["CairnEngine", "RESP", "CEpoll", "CairnSync", .product(name: "Logging", package: "swift-log")],
            swiftSettings: serverSettings
        ),
        .executableTarget(
            name: "cairnd",
            dependencies: [
                "CairnServer", "CairnEngine", "CairnSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Lua 5.1 with cjson and bit for scripting: Debian's lua5.1 source with Cairn's patch, and
        // Debian's static cjson and bit, in one archive that scripts/lib/native.sh builds once per
        // machine and describes in cairn-lua.pc.
        .systemLibrary(name: "CLua", pkgConfig: "cairn-lua"),
        // epoll for the server's Poller (glibc headers only).
        .systemLibrary(name: "CEpoll"),
        // glibc's <malloc.h>, for the engine's process memory tuning.
        .systemLibrary(name: "CMalloc"),
        // libedit's readline interface for cairn-cli's prompt (Debian libedit-dev).
        .systemLibrary(name: "CEditLine", pkgConfig: "libedit", providers: [.apt(["libedit-dev"])]),
        // cairn-cli's testable parts: reply formatting, help, admin subcommands, --pipe.
        .target(
            name: "CairnCLIKit",
            dependencies: ["RESP", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "cairn-cli",
            dependencies: [
                "CairnCLIKit", "CairnClient", "RESP", "CEditLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // Generates the command table's facts from the command spec (spec/commands/*.json;
        // scripts/command-spec).
        .executableTarget(
            name: "cairn-spec", dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),
        // The embedded engine's put/get rates with the server's options, for scripts/bench.
        .executableTarget(
            name: "cairn-bench-rocks", dependencies: ["CairnEngine", "Rocks"], swiftSettings: strictSettings
        ),
        // Fuzz targets for RESP parsing and command dispatch (scripts/fuzz builds it with libFuzzer).
        .executableTarget(
            name: "cairn-fuzz", dependencies: ["CairnEngine", "RESP", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/Sources/cairn-fuzz", swiftSettings: strictSettings
        ),
        .testTarget(name: "RocksTests", dependencies: ["Rocks"], swiftSettings: strictSettings),
        .testTarget(name: "RESPTests", dependencies: ["RESP", "CairnTestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "CairnEngineTests", dependencies: ["CairnEngine", "Rocks", "RESP", "CairnTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CairnServerTests", dependencies: ["CairnServer", "CairnEngine", "RESP", "CairnTestSupport"],
            swiftSettings: strictSettings
        ),
        // Starts the real cairnd (and redis-server) for the server and client test targets.
        .target(name: "CairnTestSupport", path: "Tests/CairnTestSupport", swiftSettings: strictSettings),
        // The TLS tests (and the TLS doc examples) compile with the TLS trait only, and use NIOSSL
        // through CairnClient's re-export, as an application does: scripts/test runs
        // `swift test --traits TLS`.
        .testTarget(
            name: "CairnClientTests",
            dependencies: [
                "CairnClient", "RESP", "CairnTestSupport", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CairnStoreTests", dependencies: ["CairnStore", "CairnClient", "CairnTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(name: "CairnCLITests", dependencies: ["CairnCLIKit", "RESP"], swiftSettings: strictSettings),
    ]
)
