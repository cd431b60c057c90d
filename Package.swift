// swift-tools-version: 6.1
import PackageDescription

/// Release links of the executables: the Swift runtime and Foundation linked statically (no Swift libraries to
/// install beside the binaries), lld with packed relative relocations (DT_RELR), no symbols exported to the dynamic
/// table, identical code folded. lecternd: 2.4 MB less resident memory, idle and playing, than the same objects
/// linked by default (33.7 against 36.1 MB playing; fewer relocations and symbols to read at load). libstdc++ linked
/// statically too (`linker/libstdc++.so`, a linker script found first): 1.4 MB less. Debug builds and the tests keep
/// the default linker (gold) and the shared libstdc++.
let releaseLinking: [LinkerSetting] = [
    .unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                  "-Xlinker", "--no-export-dynamic", "-Xlinker", "--icf=all", "-L", Context.packageDirectory + "/linker"],
                 .when(configuration: .release)),
]
/// The static runtime again where the executables' own module is compiled: its imports of Foundation then name the
/// static libraries Foundation needs (ICU, CoreFoundation...) for the link (what `--static-swift-stdlib` does).
let releaseCompiling: [SwiftSetting] = [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]

let package = Package(
    name: "Lectern",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "lecternd", targets: ["lecternd"]),
        .executable(name: "lectern", targets: ["lectern"]),
    ],
    // Pinned to exact versions: an application builds with the versions it was tested with. (Package.resolved, which
    // would pin the packages these depend on too, is not kept: it names commits, and the package mirror this project
    // is built from has commits of its own for the same tags.)
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/swiftcsv/SwiftCSV", exact: "0.10.0"),
        // The configuration file (YAML), environment and flags, with where each value came from.
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0", traits: ["YAML"]),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/apple/swift-system", exact: "1.8.1"),
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
        // Also the playbin's audio filter stages: lecterngain (the gain stage with its limiter) and lecternsilence (skip
        // silence); and the loudness meter (libebur128).
        .target(name: "CGStreamerShims", dependencies: ["CGStreamer"],
                linkerSettings: [.linkedLibrary("gstbase-1.0"), .linkedLibrary("gstaudio-1.0"), .linkedLibrary("ebur128")]),

        // GLib and GObject: headers and libraries for the C layers that need no more of GLib (GStreamer brings them).
        .systemLibrary(name: "CGLib", pkgConfig: "gobject-2.0"),
        // GUPnP (with GSSDP and libsoup 3), opened at run time, on a thread of its own that runs its GLib main context:
        // the C that runs there. Its headers are named by path: pkg-config would link the libraries.
        .target(name: "CUPnP", dependencies: ["CGLib"],
                cSettings: [.unsafeFlags(["-I/usr/include/gupnp-1.6", "-I/usr/include/gssdp-1.6",
                                          "-I/usr/include/libsoup-3.0", "-I/usr/include/libxml2"])]),
        // UPnP on the network: media renderers found and followed. Knows no books.
        .target(name: "UPnP", dependencies: ["CUPnP"]),

        // Typed D-Bus over libdbus: values, names, connection, exported objects, client calls. Knows no MPRIS.
        .target(name: "DBus", dependencies: ["CDBus", "Threads"]),
        // PulseAudio's sinks, ports and default sink as Swift events, from libpulse's threaded main loop.
        .target(name: "PulseAudio", dependencies: ["CPulse"]),
        // Folder trees watched with inotify: which folders changed, once quiet; roots that go and come back.
        .target(name: "FolderWatch"),
        // Chapters of MP4/M4B files (Nero `chpl` atom, QuickTime chapter track), read from the file itself.
        .target(name: "MP4"),
        // Typed GStreamer: a playbin wrapper, its bus as Swift events, media discovery. Knows no books.
        .target(name: "GStreamer", dependencies: ["CGStreamer", "CGStreamerShims"]),
        // The player: one actor owning an audio engine, the queue and the playback rules. No C, no D-Bus.
        .target(name: "LecternCore", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The audio engine: one playbin behind LecternCore's AudioEngine, its calls on a worker thread, hangs replaced.
        .target(name: "LecternEngine", dependencies: ["GStreamer", "LecternCore", .product(name: "Logging", package: "swift-log")]),
        // Media files read: in a child process (the discoverer, or MP3Probe), their tags, covers, chapters and the
        // words beside them or in their tags; folders walked for audio; what a client opens turned into queue items.
        .target(name: "LecternMedia", dependencies: ["ChildProcess", "GStreamer", "LecternCore", "LecternLibrary", "MP4", "Threads",
                                                    .product(name: "Logging", package: "swift-log")]),
        // The sound server's outputs watched through libpulse: an output lost pauses, its return resumes (OutputPolicy).
        .target(name: "LecternSoundServer", dependencies: ["PulseAudio", "LecternCore", .product(name: "Logging", package: "swift-log")]),
        // Spoken prompts: espeak-ng in a child process, its WAV played as a second stream beside the book.
        .target(name: "LecternSpeech", dependencies: ["ChildProcess", "GStreamer", "LecternCore", "LecternEngine"]),
        // Starting a program as a child with a clean signal mask; how it ended, in words.
        .target(name: "ChildProcess"),
        // Threads of Lectern's own for blocking work, off Swift's cooperative pool: a serial executor on a thread
        // (ThreadExecutor: the database's writes) and pools of threads that async callers hand blocking work to
        // (ThreadPool: file-system work, the library's reads). No dependencies: any target may use them.
        .target(name: "Threads"),
        // The library in SQLite: shelves, books, files, chapters, bookmarks, positions, settings. No D-Bus, no C.
        .target(name: "LecternLibrary", dependencies: ["Threads", .product(name: "GRDB", package: "GRDB.swift"),
                                                        .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        // What lecternd is asked to do: its settings from flags, the environment and the YAML file, with where each came
        // from; the daemon's options made from them; the XDG paths; the log level.
        .target(name: "LecternConfiguration", dependencies: [
            "LecternCore", .product(name: "Logging", package: "swift-log"),
            .product(name: "Configuration", package: "swift-configuration"), .product(name: "Yams", package: "Yams"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The library at work, no D-Bus: the current book opened into the player and what it does recorded, undo,
        // imports, the library folders watched, loudness measured, the writes clients ask for.
        .target(name: "LecternBooks", dependencies: [
            "FolderWatch", "GStreamer", "LecternConfiguration", "LecternCore", "LecternLibrary", "LecternMedia", "Threads",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The D-Bus faces: MPRIS, Lectern's own interfaces (Library1, Bookmarks1, History1, Player1, Output1, Prompts1,
        // Configuration1) and the desktop's Application, over the player, the books and the other parts.
        .target(name: "LecternServices", dependencies: [
            "DBus", "LecternBooks", "LecternConfiguration", "LecternCore", "LecternLibrary", "LecternMedia",
            "LecternSoundServer", "LecternSpeech", "UPnP", .product(name: "Logging", package: "swift-log"),
        ]),
        // The daemon: its parts made and wired together, the database's lock, signals, start-up and shutdown.
        .target(name: "LecternDaemon", dependencies: [
            "DBus", "LecternBooks", "LecternConfiguration", "LecternCore", "LecternEngine", "LecternLibrary", "LecternMedia",
            "LecternServices", "LecternSoundServer", "LecternSpeech", "Threads", "UPnP", .product(name: "Logging", package: "swift-log"),
        ]),
        // The version string both executables print.
        .target(name: "LecternVersion"),
        // lecternd as a client sees it: the calls, and each reply decoded into a type (what the CLI reads).
        .target(name: "LecternClient", dependencies: ["DBus"]),
        .executableTarget(name: "lecternd", dependencies: [
            "LecternDaemon", "LecternConfiguration", "LecternCore", "LecternMedia", "LecternVersion",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: releaseCompiling, linkerSettings: releaseLinking),
        .executableTarget(name: "lectern", dependencies: [
            "DBus", "LecternClient", "LecternVersion", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "SwiftCSV", package: "SwiftCSV"),
        ], swiftSettings: releaseCompiling, linkerSettings: releaseLinking),

        // Benchmarks, run on demand (scripts/bench.sh), never by the tests.
        .executableTarget(name: "lectern-bench", dependencies: ["CDBus", "TestSupport", "LecternLibrary", .product(name: "GRDB", package: "GRDB.swift")], path: "Benchmarks/lectern-bench"),

        // Tests: helpers to start a private bus, spawn processes and make audio files.
        .target(name: "TestSupport", dependencies: ["DBus", "CDBus"], path: "Tests/TestSupport"),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"]),
        .testTarget(name: "LecternCoreTests", dependencies: ["LecternCore"]),
        .testTarget(name: "LecternLibraryTests", dependencies: ["LecternLibrary", "TestSupport"]),
        .testTarget(name: "MP4Tests", dependencies: ["MP4", "TestSupport"]),
        .testTarget(name: "ChildProcessTests", dependencies: ["ChildProcess", "TestSupport"]),
        .testTarget(name: "FolderWatchTests", dependencies: ["FolderWatch", "TestSupport"]),
        .testTarget(name: "LecternMediaTests", dependencies: ["LecternMedia", "GStreamer", "TestSupport", "lecternd"]),
        .testTarget(name: "LecternSoundServerTests", dependencies: ["LecternSoundServer", "PulseAudio"]),
        .testTarget(name: "LecternConfigurationTests", dependencies: ["LecternConfiguration", "LecternCore", "TestSupport"]),
        .testTarget(name: "GStreamerTests", dependencies: ["GStreamer", "TestSupport"]),
        .testTarget(name: "LecternEngineTests", dependencies: ["LecternEngine", "LecternCore", "TestSupport"]),
        .testTarget(name: "LecternBooksTests", dependencies: ["LecternBooks", "LecternMedia", "LecternLibrary", "GStreamer", "Threads", "TestSupport", "lecternd"]),
        .testTarget(name: "LecternServicesTests", dependencies: ["LecternServices", "LecternLibrary", "DBus", "TestSupport"]),
        .testTarget(name: "ThreadsTests", dependencies: ["Threads"]),
        .testTarget(name: "IntegrationTests", dependencies: ["DBus", "LecternClient", "TestSupport", "lecternd", "lectern"]),
        // The reliability suite (issue 6): crashes, bad media, floods, hostile calls, a fuzzer. scripts/reliability.sh
        // runs it with LECTERN_RELIABILITY=short|full and prints a table; the short profile runs with every test.
        .testTarget(name: "ReliabilityTests", dependencies: ["DBus", "CDBus", "TestSupport", "lecternd"]),
        .testTarget(name: "RouteTests", dependencies: ["PulseAudio", "GStreamer", "LecternCore", "DBus", "TestSupport", "lecternd"]),
        // Being played to (issue 36): Rygel's MPRIS plugin, a GUPnP control point and an HTTP server (Peers/, Python),
        // all in a network namespace each test makes.
        .testTarget(name: "PlayedToTests", dependencies: ["DBus", "TestSupport", "lecternd", "lectern"], exclude: ["Peers"]),
    ],
    swiftLanguageModes: [.v6]
)
