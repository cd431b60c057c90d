import DBus
import Foundation
import LecternBooks
import LecternConfiguration
import Logging
import Synchronization

/// The settings in effect, and their reload: on SIGHUP and through `org.lectern.Configuration1` on
/// /org/lectern/Lectern1 (dbus/org.lectern.Configuration1.xml). A reload reads the file again (the flags and the
/// environment stay as the daemon was started with) and applies the new values at once, playback going on; the
/// output, the library and the cache folder change only when lecternd next starts. A file that cannot be used keeps
/// the settings in effect, and says why (LastReloadError, the log, the caller's error).
public actor ConfigurationService {
    static let interfaceName = "org.lectern.Configuration1"

    /// The settings in effect; readable without awaiting (the unplug bookmark's rule, Values). Replaced only by
    /// ``reload(_:)``, on the actor: reloads come one at a time.
    public nonisolated let current: Mutex<Settings>
    private let logger: Logger
    /// Set at export (``publish(on:applying:)``), with the object: what puts changed settings into effect.
    private var object: ExportedObject?
    private var apply: @Sendable (Settings, Set<Setting>) async -> Void = { _, _ in }

    public init(settings: Settings, logger: Logger) {
        self.current = Mutex(settings)
        self.logger = logger
    }

    /// Reads the configuration again and applies it: the settings applied now, and those that wait for a restart.
    @discardableResult
    public func reload(_ reason: String) async throws(ConfigurationError) -> (applied: [Setting], atRestart: [Setting]) {
        let settings = current.withLock { $0 }
        let newer: Settings
        do {
            newer = try await settings.reloaded()
        } catch {
            logger.warning("configuration not reloaded: keeping the settings in effect",
                           metadata: ["reason": "\(reason)", "error": "\(error)"])
            object?.update(Self.interfaceName, ["LastReloadError": .string(error.description)])
            throw error
        }
        let changed = settings.changes(to: newer)
        let applied = changed.filter(\.appliesAtOnce)
        let atRestart = changed.filter { !$0.appliesAtOnce }
        let inEffect = settings.applyingAtOnce(newer)
        current.withLock { $0 = inEffect }
        await apply(inEffect, Set(applied))
        logger.info("configuration reloaded", metadata: [
            "reason": "\(reason)", "file": "\(inEffect.file)",
            "applied": "\(applied.map(\.rawValue))", "at next start": "\(atRestart.map(\.rawValue))",
        ])
        object?.update(Self.interfaceName, ["LastReloadError": .string(""), "LibraryFolders": .strings(inEffect.libraryFolders)])
        try? object?.emit(Self.interfaceName, "Reloaded", [.strings(applied.map(\.rawValue)), .strings(atRestart.map(\.rawValue))])
        return (applied, atRestart)
    }

    /// `apply` puts the settings a reload changed into effect (only those: a value a client set since, e.g. Output1's
    /// Policy, stays until its setting changes).
    public func publish(on object: ExportedObject, applying apply: @escaping @Sendable (Settings, Set<Setting>) async -> Void) {
        self.object = object
        self.apply = apply
        let settings = current.withLock { $0 }
        object.update(Self.interfaceName, ["File": .string(settings.file), "LastReloadError": .string(""),
                                           "LibraryFolders": .strings(settings.libraryFolders)])
    }

    public nonisolated func makeInterface() -> Interface {
        let entry = DBusType.structure([.string, .string, .string])
        return Interface(Self.interfaceName,
            methods: [
                Method("Values", out: [("values", .array(entry))]) { [self] _ in
                    let settings = current.withLock { $0 }
                    return [.array(entry, Setting.allCases.map { setting in
                        let shown = settings.entries[setting]
                        return .structure([.string(setting.rawValue), .string(shown?.value ?? ""),
                                           .string(shown?.source.name(of: setting) ?? "")])
                    })]
                },
                Method("Reload", out: [("applied", .array(.string)), ("at_next_start", .array(.string))]) { [self] _ in
                    do throws(ConfigurationError) {
                        let (applied, atRestart) = try await reload("a client asked")
                        return [.strings(applied.map(\.rawValue)), .strings(atRestart.map(\.rawValue))]
                    } catch {
                        throw BusError(name: "org.lectern.Configuration1.Error.Invalid", message: error.description)
                    }
                },
            ],
            properties: [
                Property("File", .string),
                Property("LibraryFolders", .array(.string)),
                Property("LastReloadError", .string),
            ],
            signals: [SignalDecl("Reloaded", [("applied", .array(.string)), ("at_next_start", .array(.string))])])
    }
}
