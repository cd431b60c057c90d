import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Lectern installed by `scripts/install.sh --binaries` (what `make install` runs, with this build's executables) into
/// a prefix the test owns: the installed lecternd, its D-Bus activation files and the desktop entry are the real ones.
struct Installation: Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let script = repository.appendingPathComponent("scripts/install.sh").path
    /// The daemon's bus names, each with an installed activation file.
    static let busNames = ["org.lectern.Lectern1", "org.mpris.MediaPlayer2.lectern", "org.lectern.Lectern"]

    let prefix: String
    var binDirectory: String { prefix + "/bin" }
    var lecternd: String { binDirectory + "/lecternd" }
    var lectern: String { binDirectory + "/lectern" }
    /// Where the desktop looks for the desktop entry and icon (an XDG_DATA_DIRS entry).
    var dataDirectory: String { prefix + "/share" }
    /// The D-Bus activation files, for a bus's `servicedir`.
    var servicesDirectory: String { dataDirectory + "/dbus-1/services" }

    /// Installs into `prefix` (a directory that does not exist yet, or an empty one); throws when install.sh fails.
    static func install(into prefix: String) async throws -> Installation {
        // install.sh makes the man pages with it; scripts/test.sh builds it (`swift build --product generate-manual`).
        try #require(FileManager.default.isExecutableFile(atPath: productsDirectory.appendingPathComponent("generate-manual").path),
                     "no generate-manual beside the built binaries: run `swift build --product generate-manual`")
        let install = try await Subprocess.run(script, ["--prefix", prefix, "--binaries", productsDirectory.path],
                                               workingDirectory: repository, timeout: .seconds(60))
        try #require(install.status == 0, "install.sh: \(install.stdout)\(install.stderr)")
        return Installation(prefix: prefix)
    }

    /// `install.sh --uninstall` for this prefix.
    func uninstall() async throws -> (status: Int32, stdout: String, stderr: String) {
        try await Subprocess.run(Self.script, ["--prefix", prefix, "--uninstall"], workingDirectory: Self.repository)
    }
}
