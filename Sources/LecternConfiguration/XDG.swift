import Foundation

/// The XDG base directories, with the specification's defaults.
public enum XDG {
    static func directory(_ variable: String, default relative: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(relative)
    }
    public static var cacheHome: URL { directory("XDG_CACHE_HOME", default: ".cache") }
    public static var dataHome: URL { directory("XDG_DATA_HOME", default: ".local/share") }
    public static var configHome: URL { directory("XDG_CONFIG_HOME", default: ".config") }
}
