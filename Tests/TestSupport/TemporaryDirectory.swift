import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it by `remove()` or `deinit`.
public final class TemporaryDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// Creates `<$TMPDIR or /tmp>/<prefix>-XXXXXX` (mode 0700).
    public init(prefix: String = "lectern-test") throws {
        var base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        if base.isEmpty { base = "/tmp" }
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSLocalizedDescriptionKey: "mkdtemp in \(base): \(String(cString: strerror(errno)))",
            ])
        }
        let created = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        url = URL(fileURLWithPath: created, isDirectory: true)
    }

    /// A URL inside the directory.
    public func appending(_ component: String) -> URL {
        url.appendingPathComponent(component)
    }

    /// Removes the directory recursively. Idempotent.
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit { remove() }
}

/// The directory holding the package's built executables (`lecternd`, `lectern`): the one holding the running
/// test binary (`.build/<triple>/debug`, whatever `--scratch-path`). `LECTERN_PRODUCTS_DIR` overrides it.
public let productsDirectory: URL = {
    if let dir = ProcessInfo.processInfo.environment["LECTERN_PRODUCTS_DIR"], !dir.isEmpty {
        return URL(fileURLWithPath: dir, isDirectory: true)
    }
    // The test runner is `<products>/LecternPackageTests.xctest` (an executable on Linux), run directly by
    // `swift test` for both XCTest and Swift Testing. /proc/self/exe is resolved; Bundle.main is the fallback.
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return URL(fileURLWithPath: exe).deletingLastPathComponent()
    }
    #if os(macOS)
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
        return bundle.bundleURL.deletingLastPathComponent()
    }
    #endif
    return Bundle.main.bundleURL
}()

/// `productsDirectory/<name>`; the executable must be a dependency of the test target (or otherwise built).
public func builtExecutable(_ name: String) -> URL {
    productsDirectory.appendingPathComponent(name)
}

/// Writes an executable `#!/bin/sh` script with `body` at `path` (a new file). The file is written through a
/// close-on-exec descriptor: a process another test starts meanwhile must not inherit it open for writing, or
/// running the script fails with ETXTBSY ("Text file busy").
public func writeShellScript(at path: String, _ body: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let text = Array("#!/bin/sh\n\(body)\n".utf8)
    guard write(fd, text, text.count) == text.count else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}
