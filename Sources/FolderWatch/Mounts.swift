import Foundation

/// The file systems mounted now, by where they are mounted (the fifth field of `/proc/self/mountinfo`): a disk, a
/// tmpfs, a bind mount of a folder (which `stat`'s device number does not tell from its parent).
///
/// ```swift
/// let mounts = Mounts.current()
/// mounts.mountPoint(of: "/media/me/USB/Dune")   // "/media/me/USB"
/// ```
public struct Mounts: Sendable, Equatable {
    public let points: Set<String>

    public init(points: Set<String>) { self.points = points }

    /// The mounts as the kernel lists them now; none when they can't be read (``isMounted(_:)`` is then true of all).
    public static func current() -> Mounts {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return Mounts(points: []) }
        var points: Set<String> = ["/"]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5)
            if fields.count > 4 { points.insert(unescaped(fields[4])) }
        }
        return Mounts(points: points)
    }

    /// The mount point `path` is on: the longest mounted path that is it or a folder above it.
    public func mountPoint(of path: String) -> String {
        // An absolute path without a doubled or trailing slash (an import's folders): its folders by its slashes,
        // as NSString's `deletingLastPathComponent` gives them, without bridging each.
        let plain = path.hasPrefix("/") && !path.hasSuffix("/") && !path.contains("//")
        var candidate = path
        while candidate.count > 1 {
            if points.contains(candidate) { return candidate }
            candidate = plain ? Self.folder(of: candidate) : (candidate as NSString).deletingLastPathComponent
        }
        return "/"
    }

    private static func folder(of plainPath: String) -> String {
        guard let slash = plainPath.lastIndex(of: "/"), slash != plainPath.startIndex else { return "/" }
        return String(plainPath[..<slash])
    }

    /// Whether a file system is mounted on `path` (true when the mounts could not be read).
    public func isMounted(_ path: String) -> Bool { points.isEmpty || points.contains(path) }

    /// mountinfo writes a space, a tab, a newline and a backslash in a path as octal escapes (`\040`).
    private static func unescaped(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "\\"), rest.count >= 3, let value = UInt8(String(decoding: rest.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                rest = rest.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
