import DBus
import Dispatch
import Foundation
import LecternBooks
import LecternConfiguration
import LecternCore
import LecternEngine
import LecternLibrary
import LecternMedia
import LecternServices
import LecternSoundServer
import LecternSpeech
import Logging
import Threads
import UPnP

/// `lecternd`: wires the bus, the engine, the player and the MPRIS face together, and runs until
/// SIGTERM/SIGINT, a client's Quit, or the bus going away. Then it saves the position first and stops within
/// ``Shutdown/deadline`` (see ``Shutdown``).
public enum Daemon {
    /// Lectern's own name; owning it is what makes an instance the one instance on a bus.
    public static let busName = "org.lectern.Lectern1"
    public static let mprisName = "org.mpris.MediaPlayer2.lectern"
    /// Lectern's own object, carrying its own interfaces (org.lectern.*).
    public static let objectPath = ObjectPath("/org/lectern/Lectern1")!

    /// Runs with `settings` (reloaded on SIGHUP and through org.lectern.Configuration1); `logLevel` is the level every
    /// logger of the daemon logs at, which a reload may change.
    public static func run(_ settings: Settings, logLevel: DaemonLogLevel, logger: Logger) async throws {
        let options = settings.options
        // First, so that a SIGTERM at any time after start-up (e.g. right after the names appear) is a clean stop, and
        // one at any time at all ends the process within the shutdown's deadline (a second one at once).
        let shutdown = Shutdown(logger: logger)
        let startingUp = shutdown.enter("starting up")
        let (quitRequests, quit) = AsyncStream.makeStream(of: String.self)
        // SIGHUP reloads the configuration, once start-up is done (one waits meanwhile).
        let (reloadRequests, reloadRequest) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let signals = SignalWatcher(signals: [SIGTERM, SIGINT, SIGHUP]) { number in
            if number == SIGHUP {
                reloadRequest.yield()
            } else if shutdown.signalled(number) {
                quit.yield("signal \(number)")
            }
        }
        defer { signals.cancel() }
        // Before the bus and the library: a lecternd on another bus using this library stops us touching either.
        let libraryLock = try DatabaseLock(database: options.databasePath, bus: options.busDescription, logger: logger)
        defer { libraryLock.release() }
        // GStreamer starts (gst_init, the registry, the playbin's plugins) while the bus connection and the library
        // do; the names are claimed without waiting for it, commands wait for it below.
        let engine = GStreamerEngine.building(audioSink: options.audioSink)
        let engineReadiness = engine.readiness
        let connection = try options.busAddress.map(BusConnection.init(address:)) ?? BusConnection.session()
        defer { connection.close() }
        // Clients may call as soon as a name is owned: what can't answer yet holds their calls (in their turn) rather
        // than be unknown. Lectern's object until the library is open; the MPRIS object until it is exported.
        let lecternCalls = connection.hold(objectPath)
        let mprisCalls = connection.hold(MPRISService.path)

        switch try await connection.requestName(busName) {
        case .primaryOwner, .alreadyOwner:
            break
        default:
            let owner = try? await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                   interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                                   [.string(busName)]).first?.string
            throw DaemonError.alreadyRunning("\(busName) is owned by \(owner ?? "another process")")
        }

        // The player and its MPRIS face first, and the MPRIS name before the library opens (SQLite, a check of every
        // page, migrations: the longest step of start-up): desktops show the player sooner. Playlists needs the
        // library, so its calls wait until it is open; the player's are answered at once (commands wait below).
        let mpris = MPRISService(titleTemplate: options.titleTemplate)
        let listening = ListeningService(skipStep: options.skipStep)
        // The book session saves positions on its own thread: it reads the events from a stream.
        let (bookEvents, toBookSession) = AsyncStream.makeStream(of: PlayerEvent.self)
        // The output watcher publishes what the player did when another sound asked for the output.
        let (toOutputWatcher, interruptionNews) = InterruptionRelay.make()
        // Spoken prompts hear the player's events, the media keys and the bookmarks added through one feed.
        let (promptFeed, promptInputs) = Prompter.makeFeed()
        let player = Player(engine: engine, options: options.listening, logger: logger,
                            observers: [mpris, listening, toBookSession, toOutputWatcher, promptFeed])
        let prompts = PromptService()
        let prompter = Prompter(speech: EspeakSpeech(audioSink: options.audioSink), view: player.view, player: player,
                                inputs: promptInputs, enabled: options.prompts, voice: options.promptVoice, logger: logger,
                                problemChanged: prompts.problemChanged)
        // A reader per core (two at least): an import reads that many files at once, each in a child of its own.
        let readers = (0..<max(2, ProcessInfo.processInfo.activeProcessorCount)).map { _ in
            MediaReader(program: options.mediaReader, logger: logger)
        }
        let opener = MediaOpener(coverDirectory: options.cacheDirectory.appendingPathComponent("covers"), readers: readers,
                                 logger: logger)
        let sessionOnceOpen = Eventually<BookSession>()
        let booksOnceOpen = Eventually<BookOpener>()
        try await mpris.export(on: connection, player: player, opener: opener, books: booksOnceOpen, session: sessionOnceOpen,
                               keys: promptFeed, quit: { quit.yield("Quit") })
        let playlistsCalls = connection.hold(MPRISService.path, interfaces: [MPRISPlaylists.name])
        mprisCalls.release()
        var mprisName = Self.mprisName
        if try await connection.requestName(mprisName) != .primaryOwner {
            mprisName += ".instance\(getpid())"
            _ = try await connection.requestName(mprisName)
        }

        // Opened (migrated, checked, a corrupt file moved aside) on a thread for blocking work: the MPRIS calls are
        // answered meanwhile.
        let databasePath = options.databasePath
        let (library, databaseStatus) = await ThreadPool.fileSystem.run { openLibrary(databasePath, logger: logger) }
        // One thread for the database's writes, the book session's and those made for clients (LibraryWriter).
        let databaseWrites = ThreadExecutor(name: "lectern-db")
        let writer = LibraryWriter(library: library, executor: databaseWrites)
        // With nothing loaded, Play resumes the book played last: CanPlay says whether there is one.
        @Sendable func publishResumable() async {
            let book = (try? await library.reading { try $0.lastPlayedBook() }) ?? nil
            mpris.setResumable(book != nil, state: player.view.state)
        }
        let service = LibraryService(library: library, writer: writer,
                                     importer: Importer(library: library, writer: writer, opener: opener, logger: logger), logger: logger,
                                     bookCountChanged: { count in
                                         mpris.bookCountChanged(count)
                                         Task { await publishResumable() }  // a delete may take the book played last
                                     },
                                     booksImported: { books in Task { await sessionOnceOpen.value.booksImported(books) } },
                                     bookmarkAdded: promptFeed.bookmarkAdded)
        let configuration = ConfigurationService(settings: settings, logger: logger)
        let session = BookSession(library: library, player: player, executor: databaseWrites, events: bookEvents,
                                  logger: logger, underway: service.imports.underway, importWait: options.watching.importWait,
                                  continuesSeries: { configuration.current.withLock { $0.options.seriesContinue } }) { news in
            switch news {
            case .currentBook(let book):
                service.currentBookChanged(book)
                mpris.currentBookChanged(book)
            case .bookChanged(let id):
                service.bookChanged(id)
            case .bookmarksChanged(let id):
                service.bookmarksChanged(id)
            case .filesSkipped(let files):
                listening.filesSkipped(files)
            }
        }
        sessionOnceOpen.set(session)
        booksOnceOpen.set(BookOpener(imports: service.imports, session: session, media: opener, logger: logger) {
            await service.announce($0, forOpening: true)
        })
        let bookCount = (try? await library.reading { try $0.bookCount() }) ?? 0
        mpris.publishPlaylists(bookCount: bookCount)
        playlistsCalls.release()

        // Lectern's own object: each feature adds its interface to this list; exported once, here.
        let libraryFolders = LibraryFolders(library: library, writer: writer, imports: service.imports,
                                            options: options.watching, logger: logger,
                                            importEvents: { await service.announce($0) },
                                            availabilityChanged: { await service.availabilityChanged($0) })
        let outputWatcher = OutputWatcher(player: player, mode: options.outputPolicy, resumeWindow: options.resumeWindow,
                                          interruptions: options.interruptions, interruptionNews: interruptionNews,
                                          logger: logger) {
            if configuration.current.withLock({ $0.options.unplugBookmark }) {
                await session.addAutomaticBookmark(.unplug, title: "Output unplugged")
            }
        }
        toOutputWatcher.deliver(to: outputWatcher)
        LoudnessMeter.target.withLock { $0 = options.loudnessTarget }
        // Loudness is measured by a media reader of its own: a long measurement never holds up opening a file.
        let meter = LoudnessMeter(library: library, writer: writer, reader: MediaReader(program: options.mediaReader, logger: logger),
                                  logger: logger) { book in
            await session.loudnessMeasured(book)
            service.bookChanged(book)
        }
        let lecternInterfaces: [Interface] = service.interfaces(LibraryRules(library: library, writer: writer, session: session,
                                                                             meter: meter))
            + [listening.makeInterface(player: player), OutputService.makeInterface(outputWatcher), configuration.makeInterface(),
               prompts.makeInterface(prompter: prompter), CastService.makeInterface()]
        let lecternObject = try connection.export(objectPath, interfaces: lecternInterfaces)
        let availability = (try? await library.reading { try $0.availability() }) ?? LibraryAvailability(offlineBooks: 0, missingFiles: 0)
        lecternObject.update(LibraryService.libraryInterface, [
            "CurrentBook": .int64(0), "DatabaseStatus": .string(databaseStatus),
            "BookCount": .uint32(UInt32(clamping: bookCount)),
        ].merging(LibraryService.healthProperties(library.health)) { $1 }
            .merging(LibraryService.availabilityProperties(availability)) { $1 })
        service.object.withLock { $0 = lecternObject }
        library.observeHealth { service.healthChanged($0) }
        listening.publish(on: lecternObject, player: player)
        await OutputService.publish(outputWatcher, on: lecternObject)
        await prompts.publish(on: lecternObject, prompter: prompter)
        // The home network (UPnP), when asked for: the renderers to cast to, followed as they come and go.
        let (renderers, networkProblem) = joinNetwork(options, logger: logger)
        defer { renderers?.stop() }
        CastService.publish(renderers, problem: networkProblem, on: lecternObject)
        await configuration.publish(on: lecternObject) { settings, changed in
            let options = settings.options
            logLevel.value = settings.logLevel
            if changed.contains(.skipStep) { listening.setSkipStep(options.skipStep) }
            if !changed.isDisjoint(with: [.smartRewind, .rewindAfter, .sleepFade]) { await player.setOptions(options.listening) }
            if changed.contains(.titleTemplate) {
                await player.withPublishedState { mpris.setTitleTemplate(options.titleTemplate, state: $0) }
            }
            if changed.contains(.outputPolicy) { await outputWatcher.setMode(options.outputPolicy) }
            if changed.contains(.resumeWindow) { await outputWatcher.setResumeWindow(options.resumeWindow) }
            if changed.contains(.interruptions) { await outputWatcher.setInterruptions(options.interruptions) }
            if changed.contains(.libraryFolders) { await libraryFolders.watch(settings.libraryFolders) }
            if changed.contains(.prompts) { await prompts.setEnabled(options.prompts, prompter: prompter) }
            if !changed.isDisjoint(with: [.promptLanguage, .promptVoice]) { await prompts.setVoice(options.promptVoice, prompter: prompter) }
            if changed.contains(.loudnessTarget) {
                LoudnessMeter.target.withLock { $0 = options.loudnessTarget }
                await session.loudnessTargetChanged()
            }
        }
        // The desktop's way in (a click on the shell's media card, gtk-launch): org.freedesktop.Application under the
        // application id, the name the desktop entry's DBusActivatable=true makes the desktop call.
        _ = try connection.export(ApplicationService.path, interfaces: [
            ApplicationService.interface(books: booksOnceOpen, logger: logger),
        ])
        if try await connection.requestName(ApplicationService.id) != .primaryOwner {
            logger.warning("another process owns the application name", metadata: ["name": "\(ApplicationService.id)"])
        }

        // Before any command reaches the player (calls wait in their queue meanwhile; Get and GetAll are answered
        // from the published properties), and before the book is resumed.
        try await engineReadiness.wait()
        // After the names: clients see the player at once, then the book it resumes (a PropertiesChanged).
        await session.restore()
        await publishResumable()
        // Lectern's own API answers once the book is back and the library folders are watched: a client that started
        // the daemon (D-Bus activation) and asks it something first reads the book it resumed, never "nothing
        // loaded" (its later calls wait behind), and may count on changes to the folders from now on being seen.
        await libraryFolders.watch(settings.libraryFolders)
        lecternCalls.release()
        logger.info("lecternd ready", metadata: ["bus": "\(connection.uniqueName)", "mpris": "\(mprisName)",
                                                 "sink": "\(options.audioSink ?? "autoaudiosink")"])

        shutdown.leave(startingUp)

        await withTaskGroup(of: String.self) { group in
            // Each named (the shutdown's deadline says which did not end), and the reason to stop when it ends.
            let tasks: [(name: String, ended: String, run: @Sendable () async -> Void)] = [
                ("serving calls", "the bus connection closed", { await connection.serveCalls() }),
                ("the player", "the player stopped", { await player.run() }),
                ("the spoken prompts", "the spoken prompts stopped", { await prompter.run() }),
                ("the book session", "the book session stopped", { await session.run() }),
                ("the output watcher", "the output watcher stopped", { await outputWatcher.run() }),
                ("the library retry loop", "the library retry loop stopped", { await service.retryUnsavedWrites() }),
                ("watching the library folders", "the library folders' watch stopped", { await libraryFolders.run() }),
                ("reloading the configuration", "the configuration's reloads stopped", {
                    for await _ in reloadRequests { _ = try? await configuration.reload("SIGHUP") }
                }),
            ]
            for task in tasks {
                group.addTask {
                    await shutdown.activity(task.name, task.run)
                    return task.ended
                }
            }
            group.addTask {
                for await reason in quitRequests { return reason }
                return "cancelled"
            }
            let reason = await group.next() ?? "?"
            shutdown.begin(reason)
            logger.info("lecternd stopping", metadata: ["reason": "\(reason)"])
            // The place first: whatever hangs after this, the deadline or a second signal, it is saved.
            await shutdown.activity("saving the position") { await session.close() }
            // No more calls (one in its handler finishes) and no more ticks: nothing restarts the player once stopped.
            group.cancelAll()
            await shutdown.activity("stopping the player") { await player.stop() }
            // Fails at once when the bus has gone away (the calls end with the connection).
            await shutdown.activity("giving the bus names back") {
                try? await connection.releaseName(mprisName)
                try? await connection.releaseName(busName)
            }
        }
        await shutdown.activity("closing the bus connection") { connection.close() }
        // After the writes queued before it, on their thread: the -wal and -shm files go with the last connection.
        await shutdown.activity("closing the library") {
            do { try await writer.write { try $0.close() } } catch {
                logger.warning("the library could not be closed; SQLite recovers it at the next start", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Opens the library; when it can't be (unreadable, read-only folder), playback still works on an
/// in-memory library, and the status says why.
private func openLibrary(_ path: String, logger: Logger) -> (Library, String) {
    do {
        let library = try Library(path: path)
        if let aside = library.movedAsideCorruptFile {
            logger.error("the library database was corrupt: moved it aside and started a new one",
                         metadata: ["corrupt": "\(aside)", "path": "\(path)"])
            return (library, "recreated: the corrupt database was moved to \(aside)")
        }
        if library.isReadOnly {
            logger.error("the library database is read-only: it can be read and played from, changes won't be saved",
                         metadata: ["path": "\(path)"])
            return (library, "read-only: \(library.health.lastError)")
        }
        return (library, "ok")
    } catch {
        logger.error("cannot open the library database; nothing will be remembered", metadata: ["path": "\(path)", "error": "\(error)"])
        guard let memory = try? Library() else { preconditionFailure("SQLite cannot open an in-memory database") }
        return (memory, "unavailable: \(error)")
    }
}

/// The home network (UPnP) as `options` ask for it: its renderer browser, or none and why (off, or GUPnP missing).
private func joinNetwork(_ options: DaemonOptions, logger: Logger) -> (RendererBrowser?, String) {
    guard options.network else { return (nil, "the network is off (lecternd's network setting)") }
    let interface = options.networkInterface.isEmpty ? nil : options.networkInterface
    do {
        let browser = try RendererBrowser(interface: interface)
        logger.info("on the home network", metadata: ["interface": "\(interface ?? "every interface")"])
        return (browser, "")
    } catch {
        logger.error("cannot join the home network", metadata: ["error": "\(error)"])
        return (nil, "cannot join the home network: \(error)")
    }
}
