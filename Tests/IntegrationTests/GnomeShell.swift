import DBus
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The real GNOME Shell of Debian 12 (43), headless (no X server, a virtual monitor), on a test's session bus, with the
/// real gsd-media-keys: what a GNOME user's media card and media keys do, read and pressed through the shell's own
/// `org.gnome.Shell.Eval` (enabled by an extension of its own that turns on the shell's unsafe mode).
///
/// Both run in a temporary directory of their own (HOME, XDG_RUNTIME_DIR, settings in a keyfile: no dconf service),
/// beside a private bus standing for the system bus, which the shell needs. `stop()` or `deinit` kills both (SIGKILL:
/// the shell segfaults when asked to stop) and the system bus, and removes the directory.
final class GnomeShell: Sendable {
    /// A media key, by its keysym name (Clutter's `KEY_…`).
    enum MediaKey: String, Sendable {
        case play = "AudioPlay", next = "AudioNext", previous = "AudioPrev", stop = "AudioStop"
        case forward = "AudioForward", rewind = "AudioRewind"
    }

    /// What the card of a player in the shell's date menu shows.
    struct MediaCard: Decodable, Equatable, Sendable {
        let title: String
        let body: String
        /// The file of the cover image; nil for the card's fallback icon.
        let cover: String?
        let playPauseIcon: String
        let canGoPrevious: Bool
        let canGoNext: Bool
    }

    static let extensionID = "unsafe-mode@tests.lectern.org"

    let directory: TemporaryDirectory
    let systemBus: PrivateBus
    let shell: Subprocess
    let mediaKeys: Subprocess
    let log: URL
    private let connection: BusConnection

    /// Starts the shell on the session bus at `sessionBus` and waits until it has started up, then gsd-media-keys and
    /// waits until it has grabbed its keys. The desktop finds `installation`'s desktop entry (XDG_DATA_DIRS) and has its
    /// bin directory on PATH, as a user's desktop has that of an install into ~/.local.
    init(sessionBus: String, installation: Installation) async throws {
        directory = try TemporaryDirectory(prefix: "lectern-shell")
        log = directory.appending("shell.log")
        let home = directory.appending("home")
        let runtime = directory.appending("runtime")
        let extensionDirectory = home.appendingPathComponent(".local/share/gnome-shell/extensions/\(Self.extensionID)")
        let settings = home.appendingPathComponent(".config/glib-2.0/settings")
        let fm = FileManager.default
        try fm.createDirectory(at: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try fm.createDirectory(at: extensionDirectory, withIntermediateDirectories: true)
        try fm.createDirectory(at: settings, withIntermediateDirectories: true)
        try """
        {"uuid": "\(Self.extensionID)", "name": "Unsafe mode", "description": "org.gnome.Shell.Eval for Lectern's tests",
         "shell-version": ["43"]}
        """.write(to: extensionDirectory.appendingPathComponent("metadata.json"), atomically: true, encoding: .utf8)
        try """
        function init() {}
        function enable() { global.context.unsafe_mode = true; }
        function disable() { global.context.unsafe_mode = false; }
        """.write(to: extensionDirectory.appendingPathComponent("extension.js"), atomically: true, encoding: .utf8)
        try "[org/gnome/shell]\nenabled-extensions=['\(Self.extensionID)']\n"
            .write(to: settings.appendingPathComponent("keyfile"), atomically: true, encoding: .utf8)

        systemBus = try PrivateBus()
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let environment = Subprocess.environment(
            adding: [
                "HOME": home.path, "XDG_RUNTIME_DIR": runtime.path, "XDG_CURRENT_DESKTOP": "GNOME",
                "XDG_DATA_HOME": home.path + "/.local/share", "XDG_CONFIG_HOME": home.path + "/.config",
                "XDG_CACHE_HOME": home.path + "/.cache", "XDG_STATE_HOME": home.path + "/.local/state",
                "XDG_DATA_DIRS": "\(installation.dataDirectory):/usr/local/share:/usr/share",
                "PATH": "\(installation.binDirectory):\(path)",
                "GSETTINGS_BACKEND": "keyfile",
                "DBUS_SESSION_BUS_ADDRESS": sessionBus, "DBUS_SYSTEM_BUS_ADDRESS": systemBus.address,
            ],
            removing: ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE"])
        connection = try BusConnection(address: sessionBus)
        shell = try Subprocess("gnome-shell", ["--headless", "--wayland", "--no-x11", "--virtual-monitor", "1280x800"],
                               environment: environment, stdout: .appendingToFile(log), stderr: .appendingToFile(log),
                               newProcessGroup: true)
        do {
            try await Self.waitFor("the shell to start up", "Main.layoutManager._startingUp === false", on: connection,
                                   while: [shell], log: log)
            // It draws on the shell's Wayland display (in XDG_RUNTIME_DIR), there once the shell has started.
            mediaKeys = try Subprocess("/usr/libexec/gsd-media-keys", environment: environment,
                                       stdout: .appendingToFile(log), stderr: .appendingToFile(log), newProcessGroup: true)
        } catch {
            shell.kill()
            _ = await shell.waitForExit(timeout: .seconds(10))
            throw error
        }
        do {
            try await Self.waitFor("gsd-media-keys to grab its keys", "Main.shellDBusService._grabbedAccelerators.size > 0",
                                   on: connection, while: [shell, mediaKeys], log: log)
        } catch {
            stop()
            throw error
        }
    }

    /// What the shell and gsd-media-keys have written so far.
    var output: String { Self.output(log) }

    private static func output(_ log: URL) -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Runs `code` in the shell; the JSON of its value ("" for undefined).
    @discardableResult
    func eval(_ code: String) async throws -> String {
        try await Self.eval(code, on: connection)
    }

    private static func eval(_ code: String, on connection: BusConnection) async throws -> String {
        let reply = try await connection.call("org.gnome.Shell", path: "/org/gnome/Shell", interface: "org.gnome.Shell",
                                              member: "Eval", [.string(code)], timeout: .seconds(10))
        guard reply.count == 2, let succeeded = reply[0].bool, let value = reply[1].string else {
            throw FixtureError("org.gnome.Shell.Eval replied \(reply)")
        }
        guard succeeded else { throw FixtureError("org.gnome.Shell.Eval of \(code): \(value)") }
        return value
    }

    // MARK: The media card

    /// The card of the player at `busName`, nil when the shell shows none.
    func card(of busName: String = MPRIS.busName) async throws -> MediaCard? {
        struct Found: Decodable { let card: MediaCard? }
        let json = try await eval("""
            (() => {
                const m = \(cardExpression(busName));
                return { card: m ? {
                    title: m.titleLabel.text, body: m.bodyLabel.text,
                    cover: m._icon.gicon instanceof imports.gi.Gio.FileIcon ? m._icon.gicon.get_file().get_path() : null,
                    playPauseIcon: m._playPauseButton.child.icon_name,
                    canGoPrevious: m._prevButton.reactive, canGoNext: m._nextButton.reactive,
                } : null };
            })()
            """)
        return try JSONDecoder().decode(Found.self, from: Data(json.utf8)).card
    }

    /// Polls the card (every 50 ms, up to `timeout`) until `condition` holds; returns the last one read.
    @discardableResult
    func waitForCard(of busName: String = MPRIS.busName, timeout: Duration = .seconds(10),
                     _ condition: (MediaCard?) -> Bool) async throws -> MediaCard? {
        try await poll(timeout: timeout, every: .milliseconds(50), { try await card(of: busName) }, until: condition)
    }

    /// Presses one of the card's buttons, as a click does.
    func pressCardButton(_ button: CardButton, of busName: String = MPRIS.busName) async throws {
        try await eval("\(cardExpression(busName))._\(button.rawValue)Button.emit('clicked', 1)")
    }

    enum CardButton: String, Sendable {
        case previous = "prev", playPause = "playPause", next = "next"
    }

    /// What a click on the card itself does: raise the player (through its desktop entry when the shell finds one).
    func activateCard(of busName: String = MPRIS.busName) async throws {
        try await eval("\(cardExpression(busName))._player.raise()")
    }

    private func cardExpression(_ busName: String) -> String {
        "Main.panel.statusArea.dateMenu._messageList._mediaSection._messages.find(m => m._player._busName === '\(busName)')"
    }

    // MARK: Media keys

    /// Presses and releases `key` on a virtual keyboard of the shell's own input path: what gsd-media-keys sees of a
    /// real keyboard's key.
    func press(_ key: MediaKey) async throws {
        try await eval("""
            const Clutter = imports.gi.Clutter;
            global.lecternKeyboard ??= Clutter.get_default_backend().get_default_seat()
                .create_virtual_device(Clutter.InputDeviceType.KEYBOARD_DEVICE);
            for (const state of [Clutter.KeyState.PRESSED, Clutter.KeyState.RELEASED])
                global.lecternKeyboard.notify_keyval(imports.gi.GLib.get_monotonic_time(), Clutter.KEY_\(key.rawValue), state);
            """)
    }

    // MARK: Running

    /// Evaluates `condition` every 100 ms until it is true; throws after 60 s, or when one of `processes` exits.
    private static func waitFor(_ what: String, _ condition: String, on connection: BusConnection,
                                while processes: [Subprocess], log: URL) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var last = ""
        while ContinuousClock.now < deadline {
            for process in processes where !process.isRunning {
                throw FixtureError("\(process.executablePath) exited (\(process.termination.map { "\($0)" } ?? "?")) while "
                                   + "waiting for \(what):\n\(output(log))")
            }
            do {
                if try await eval(condition, on: connection) == "true" { return }
            } catch {
                last = "\(error)"  // no org.gnome.Shell yet, or no unsafe mode yet
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("no \(what) within 60 s (last: \(last)):\n\(output(log))")
    }

    /// Kills gsd-media-keys and the shell (SIGKILL, their process groups), stops the system bus, removes the directory.
    /// Idempotent.
    func stop() {
        for process in [mediaKeys, shell] where process.isRunning {
            process.kill()
            _ = process.waitForExit(timeout: .seconds(10))
        }
        connection.close()
        systemBus.stop()
        directory.remove()
    }

    deinit { stop() }
}
