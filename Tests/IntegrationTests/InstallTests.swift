import DBus
import Foundation
import Testing
import TestSupport

/// `scripts/install.sh` (what `make install` runs) into a temporary prefix, with the binaries of this build: every
/// installed file, D-Bus activation from the installed service files on a private bus, the desktop's activation
/// reaching the running daemon, and an uninstall that leaves nothing behind.
@Suite struct InstallTests {
    @Test func installedLecternIsStartedByTheBusOnceAndUninstallsWithoutATrace() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-install")
        defer { root.remove() }
        let installation = try await Installation.install(into: root.appending("prefix").path)
        let prefix = installation.prefix

        // Every file, each where systemd, the bus, the desktop and the shells look for it.
        let manifest = try String(contentsOfFile: prefix + "/share/lectern/installed-files", encoding: .utf8)
        let installed = manifest.split(separator: "\n").filter { $0.hasPrefix("file ") }.map { String($0.dropFirst(5)) }
        let expected = ["bin/lecternd", "bin/lectern",
                        "share/dbus-1/services/org.lectern.Lectern1.service",
                        "share/dbus-1/services/org.mpris.MediaPlayer2.lectern.service",
                        "share/dbus-1/services/org.lectern.Lectern.service",
                        "share/systemd/user/lecternd.service",
                        "share/applications/org.lectern.Lectern.desktop",
                        "share/icons/hicolor/scalable/apps/org.lectern.Lectern.svg",
                        "share/bash-completion/completions/lectern", "share/zsh/site-functions/_lectern",
                        "share/fish/vendor_completions.d/lectern.fish",
                        "share/man/man1/lecternd.1", "share/man/man1/lectern.1"].map { prefix + "/" + $0 }
        #expect(installed.sorted() == expected.sorted())
        for file in expected { #expect(FileManager.default.isReadableFile(atPath: file), "\(file) is missing") }
        #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/lecternd"))

        // The installed path written into the activation files and the unit, never a fixed one.
        let lecternd = installation.lecternd
        for name in Installation.busNames {
            let service = try String(contentsOfFile: "\(prefix)/share/dbus-1/services/\(name).service", encoding: .utf8)
            #expect(service.contains("\nName=\(name)\n") && service.contains("\nExec=\(lecternd)\n")
                    && service.contains("\nSystemdService=lecternd.service"), "\(name).service: \(service)")
        }
        let unit = try String(contentsOfFile: prefix + "/share/systemd/user/lecternd.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=\(lecternd)\n") && unit.contains("\nBusName=org.lectern.Lectern1\n"), "\(unit)")
        #expect(unit.contains("\nExecReload=/bin/kill -HUP $MAINPID\n") && unit.contains("\nRestartPreventExitStatus=78\n"), "\(unit)")
        // As systemd reads it (no systemd user manager runs here: its own check of the unit, keys and commands).
        let runtime = root.appending("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let verified = try await Subprocess.run("/usr/bin/systemd-analyze",
                                                ["--user", "verify", prefix + "/share/systemd/user/lecternd.service"],
                                                env: ["XDG_RUNTIME_DIR": runtime.path, "PATH": "/usr/bin:/bin"])
        #expect(verified.status == 0 && verified.stderr.isEmpty, "systemd-analyze verify: \(verified)")
        let desktopFile = prefix + "/share/applications/org.lectern.Lectern.desktop"
        let desktop = try String(contentsOfFile: desktopFile, encoding: .utf8)
        #expect(desktop.contains("\nDBusActivatable=true\n") && desktop.contains("\nIcon=org.lectern.Lectern\n")
                && desktop.contains("\nExec=\(prefix)/bin/lectern activate %U\n"), "\(desktop)")
        let validation = try await Subprocess.run("desktop-file-validate", [desktopFile])
        #expect(validation.status == 0, "desktop-file-validate: \(validation.stdout)\(validation.stderr)")
        let bash = try String(contentsOfFile: prefix + "/share/bash-completion/completions/lectern", encoding: .utf8)
        let zsh = try String(contentsOfFile: prefix + "/share/zsh/site-functions/_lectern", encoding: .utf8)
        let fish = try String(contentsOfFile: prefix + "/share/fish/vendor_completions.d/lectern.fish", encoding: .utf8)
        #expect(bash.contains("-F _lectern lectern") && bash.contains("bookmark"), "bash completion")
        #expect(zsh.hasPrefix("#compdef lectern") && zsh.contains("bookmark"), "zsh completion")
        #expect(fish.contains("complete -c 'lectern'") && fish.contains("bookmark"), "fish completion")
        // The man pages: each program's whole --help, its subcommands and options, as mdoc.
        let lecterndPage = try String(contentsOfFile: prefix + "/share/man/man1/lecternd.1", encoding: .utf8)
        let lecternPage = try String(contentsOfFile: prefix + "/share/man/man1/lectern.1", encoding: .utf8)
        #expect(lecterndPage.contains("\n.Dt LECTERND 1\n") && lecterndPage.contains("\n.Nm lecternd\n")
                && lecterndPage.contains("print-config") && lecterndPage.contains("skip-step"), "lecternd.1")
        #expect(lecternPage.contains("\n.Dt LECTERN 1\n") && lecternPage.contains("\n.Nm lectern\n")
                && lecternPage.contains("lectern bookmark export") && lecternPage.contains("lectern config reload"), "lectern.1")

        // No daemon running: the installed client's first call starts one, through the bus's activation.
        let bus = try PrivateBus(serviceDirectories: [installation.servicesDirectory])
        defer { bus.stop() }
        let home = root.appending("home").path
        let connection = try BusConnection(address: bus.address)
        defer { connection.close() }
        // What the activated daemon inherits: a home of its own (its library, its covers), not the machine's.
        try await setActivationEnvironment(["HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CACHE_HOME": home + "/cache",
                                            "XDG_CONFIG_HOME": home + "/config",
                                            // Its output, as a user would set it (no sound server here).
                                            "LECTERN_AUDIO_SINK": "fakesink sync=true"], on: connection)
        let status = try await Subprocess.run(prefix + "/bin/lectern", ["status"], env: bus.environment, timeout: .seconds(30))
        #expect(status.status == 0 && status.stdout.contains("Stopped"), "lectern status: \(status)")
        let owner = try await ownerPID(of: "org.lectern.Lectern1", on: connection)
        #expect(try await ownerPID(of: "org.mpris.MediaPlayer2.lectern", on: connection) == owner)
        #expect(try await ownerPID(of: "org.lectern.Lectern", on: connection) == owner)
        #expect(executable(of: owner) == lecternd)
        #expect(FileManager.default.fileExists(atPath: home + "/data/lectern/library.sqlite"), "its own library")

        // MPRIS clients find it; the desktop's activation (DBusActivatable) and the desktop entry's Exec reach it.
        let playerctl = try await Subprocess.run("playerctl", ["-p", "lectern", "status"], env: bus.environment)
        #expect(playerctl.status == 0 && playerctl.stdout.contains("Stopped"), "playerctl: \(playerctl)")
        let launch = try await Subprocess.run("gapplication", ["launch", "org.lectern.Lectern"], env: bus.environment)
        #expect(launch.status == 0, "gapplication launch: \(launch)")
        let activate = try await Subprocess.run(prefix + "/bin/lectern", ["activate"], env: bus.environment)
        #expect(activate.status == 0, "lectern activate: \(activate)")
        let open = try await Subprocess.run(prefix + "/bin/lectern", ["activate", root.appending("no-such.ogg").path],
                                            env: bus.environment)
        #expect(open.status != 0 && open.stderr.contains("No such file"), "Open reaches the daemon: \(open)")
        #expect(try await ownerPID(of: "org.lectern.Lectern1", on: connection) == owner, "still the same daemon")
        #expect(runningProcesses(of: lecternd) == [owner], "one daemon, never a second")

        // A book listened to, the daemon stopped: the next first call starts it again, paused where it was.
        let book = root.appending("Evening Tales")
        try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
        try await offThePool { try AudioFiles.ogg(book.appendingPathComponent("1.ogg"), seconds: 8) }
        for command in [["import", book.path], ["play", "Evening Tales"], ["pause"], ["position", "0:05"]] {
            let result = try await Subprocess.run(prefix + "/bin/lectern", command, env: bus.environment)
            #expect(result.status == 0, "lectern \(command): \(result)")
        }
        try await stop(owner, lecternd)
        let restored = try await Subprocess.run(prefix + "/bin/lectern", ["status"], env: bus.environment, timeout: .seconds(30))
        #expect(restored.status == 0 && restored.stdout.hasPrefix("Paused") && restored.stdout.contains("0:05 / 0:08"),
                "lectern status after a restart by activation: \(restored)")
        let again = try await ownerPID(of: "org.lectern.Lectern1", on: connection)
        #expect(again != owner && executable(of: again) == lecternd)
        try await stop(again, lecternd)

        let uninstall = try await installation.uninstall()
        #expect(uninstall.status == 0, "install.sh --uninstall: \(uninstall.stdout)\(uninstall.stderr)")
        #expect(!FileManager.default.fileExists(atPath: prefix), "the prefix the install created is gone")
    }

    /// SIGTERM to `pid`, and waits (up to 10 s) until no process runs `executable`.
    private func stop(_ pid: pid_t, _ executable: String) async throws {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(10)
        while !runningProcesses(of: executable).isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(runningProcesses(of: executable).isEmpty, "lecternd stops on SIGTERM")
    }

    /// Into the user's own prefix (~/.local), with a systemd user manager running, the unit is enabled (started at
    /// login: media keys and playerctl only reach a running player) and the uninstall disables it; with no user
    /// manager, or into another prefix, systemd is not touched. No user manager can run here (`systemd --user` stays
    /// "offline"), so `systemctl` is a stand-in that answers as one would and writes down what it was asked.
    @Test(arguments: [(true, true), (true, false), (false, true)])
    func theUnitIsEnabledAtLoginOnlyInTheUsersOwnPrefix(ownPrefix: Bool, managerRunning: Bool) async throws {
        let root = try TemporaryDirectory(prefix: "lectern-install")
        defer { root.remove() }
        let home = root.appending("home").path
        let tools = root.appending("tools")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        let asked = root.appending("systemctl.log").path
        let stub = tools.appendingPathComponent("systemctl").path
        try writeShellScript(at: stub, """
            echo "$*" >>'\(asked)'
            [ "$2" = show-environment ] && exit \(managerRunning ? 0 : 1)
            exit 0
            """)
        let environment = ["HOME": home, "PATH": tools.path + ":/usr/bin:/bin"]
        let prefix = ownPrefix ? home + "/.local" : root.appending("elsewhere").path
        let install = try await Subprocess.run(Installation.script, ["--prefix", prefix, "--binaries", productsDirectory.path],
                                               env: environment, workingDirectory: Installation.repository)
        #expect(install.status == 0, "\(install)")
        let uninstall = try await Subprocess.run(Installation.script, ["--prefix", prefix, "--uninstall"], env: environment,
                                                 workingDirectory: Installation.repository)
        #expect(uninstall.status == 0, "\(uninstall)")
        let calls = ((try? String(contentsOfFile: asked, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        switch (ownPrefix, managerRunning) {
        case (true, true):
            #expect(calls == ["--user show-environment", "--user daemon-reload", "--user enable lecternd.service",
                              "--user disable --now lecternd.service", "--user daemon-reload"], "\(calls)")
        case (true, false):
            #expect(calls == ["--user show-environment"], "only asked whether a manager runs: \(calls)")
        case (false, _):
            #expect(calls.isEmpty, "another prefix: systemd not asked at all: \(calls)")
        }
        #expect(!FileManager.default.fileExists(atPath: prefix + "/share/lectern"), "uninstalled")
    }
}
