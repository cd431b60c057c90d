// swift-tools-version: 6.1
import PackageDescription

/// Release links of the executables: lld with packed relative relocations (DT_RELR), no symbols exported to the
/// dynamic table, identical code folded. lecternd: about 2.4 MB less resident memory, idle and playing (fewer
/// relocations and symbols to read at load; docs/benchmarks.md, "2026-11-22: start-up and memory"). Debug builds
/// and the tests keep the default linker (gold).
let releaseLinking: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                  "-Xlinker", "--no-export-dynamic", "-Xlinker", "--icf=all"], .when(configuration: .release)),
]
// lecternd's release link puts the functions that a session runs first, together (scripts/symbol-order.sh writes
// the list; lecternd.ld gathers those without a symbol): the kernel maps code in 64 KB windows around each page
// first run, so scattered functions cost memory. Best with every module compiled one section per function, as
// scripts/swift-release builds (docs/benchmarks.md, "Memory: function sections").
let lecterndOrder: [LinkerSetting] = [
    .unsafeFlags(["-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/lecternd/lecternd.order",
                  "-Xlinker", "--no-warn-symbol-ordering",
                  "-Xlinker", "--script=\(Context.packageDirectory)/Sources/lecternd/lecternd.ld"], .when(configuration: .release)),
]

let package = Package(
    name: "Lectern",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "lecternd", targets: ["lecternd"]),
        .executable(name: "lectern", targets: ["lectern"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // C libraries, as pkg-config finds them.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CGStreamer", pkgConfig: "gstreamer-pbutils-1.0",
                       providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        // Its headers only: libpulse is opened at run time (Sources/CPulse/shim.h), not linked.
        .systemLibrary(name: "CPulse"),
        // GLib/GStreamer macros and variadic functions Swift cannot call, and the C that runs on streaming threads.
        .target(name: "CGStreamerShims", dependencies: ["CGStreamer"]),

        // Typed D-Bus over libdbus: values, names, connection, exported objects, client calls. Knows no MPRIS.
        .target(name: "DBus", dependencies: ["CDBus"]),
        // PulseAudio's sinks, ports and default sink as Swift events, from libpulse's threaded main loop.
        .target(name: "PulseAudio", dependencies: ["CPulse"]),
        // Chapters of MP4/M4B files (Nero `chpl` atom, QuickTime chapter track), read from the file itself.
        .target(name: "MP4"),
        // Typed GStreamer: a playbin wrapper, its bus as Swift events, media discovery. Knows no books.
        .target(name: "GStreamer", dependencies: ["CGStreamer", "CGStreamerShims"]),
        // The player: one actor owning an audio engine, the queue and the playback rules. No C, no D-Bus.
        .target(name: "LecternCore", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The library in SQLite: shelves, books, files, chapters, bookmarks, positions, settings. No D-Bus, no C.
        .target(name: "LecternLibrary", dependencies: [.product(name: "GRDB", package: "GRDB.swift")]),
        // The daemon: the GStreamer engine, the MPRIS adapter, start-up and shutdown.
        .target(name: "LecternDaemon", dependencies: [
            "DBus", "GStreamer", "PulseAudio", "MP4", "LecternCore", "LecternLibrary", .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "lecternd", dependencies: [
            "LecternDaemon", "LecternCore", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], exclude: ["lecternd.order", "lecternd.ld"], linkerSettings: releaseLinking + lecterndOrder),
        .executableTarget(name: "lectern", dependencies: [
            "DBus", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], linkerSettings: releaseLinking),

        // Benchmarks, run on demand (scripts/bench.sh), never by the tests.
        .executableTarget(name: "lectern-bench", dependencies: ["CDBus", "TestSupport", "LecternLibrary", .product(name: "GRDB", package: "GRDB.swift")], path: "Benchmarks/lectern-bench"),

        // Tests: helpers to start a private bus, spawn processes and make audio files.
        .target(name: "TestSupport", dependencies: ["DBus", "CDBus"], path: "Tests/TestSupport"),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"]),
        .testTarget(name: "LecternCoreTests", dependencies: ["LecternCore"]),
        .testTarget(name: "LecternLibraryTests", dependencies: ["LecternLibrary", "TestSupport"]),
        .testTarget(name: "MP4Tests", dependencies: ["MP4", "TestSupport"]),
        .testTarget(name: "GStreamerTests", dependencies: ["GStreamer", "LecternCore", "LecternDaemon", "TestSupport", "lecternd"]),
        .testTarget(name: "IntegrationTests", dependencies: ["DBus", "TestSupport", "lecternd", "lectern"]),
        // The reliability suite (issue 6): crashes, bad media, floods, hostile calls, a fuzzer. scripts/reliability.sh
        // runs it with LECTERN_RELIABILITY=short|full and prints a table; the short profile runs with every test.
        .testTarget(name: "ReliabilityTests", dependencies: ["DBus", "CDBus", "TestSupport", "lecternd"]),
        .testTarget(name: "RouteTests", dependencies: ["PulseAudio", "GStreamer", "LecternCore", "LecternDaemon", "DBus", "TestSupport", "lecternd"]),
    ],
    swiftLanguageModes: [.v6]
)
