# docket's messages in English: the reference catalog. Every other language's file has the same
# message ids with the same variables (a test in src/texts/catalog.rs checks it). Messages are sent as
# plain text, without a parse mode. Variables named $name are file names; $ticket is "#4812";
# sizes, dates and durations arrive already formatted by the messages below.

## The language itself

# How the language calls itself, on its /lang button.
language-name = English
# The answer to the /lang question.
lang-question = Choose the language I write to you in:
# What /lang answers once a language is chosen (in that language).
lang-chosen = From now on I write in English.

## Sizes: decimal units for files, binary units for memory limits

decimal-separator = .
size-b = { $number } B
size-kb = { $number } kB
size-mb = { $number } MB
size-gb = { $number } GB
size-tb = { $number } TB
size-pb = { $number } PB
size-eb = { $number } EB
size-kib = { $number } KiB
size-mib = { $number } MiB
size-gib = { $number } GiB
size-tib = { $number } TiB
size-pib = { $number } PiB
size-eib = { $number } EiB
size-unknown = size unknown
size-unknown-short = unknown

## Durations: retention in whole parts ("7days", "1h 30m"), limits in one unit ("10 min")

duration-days = { $n ->
    [one] { $n }day
   *[other] { $n }days
}
duration-hours = { $n }h
duration-minutes = { $n }m
duration-seconds = { $n }s
limit-hours = { $n } h
limit-minutes = { $n } min
limit-seconds = { $n } s

## A job's states, in words

state-accepted = queued
state-fetched = downloaded, waiting to be processed
state-processing = processing
state-ready = ready
state-failed = failed
state-expired = expired

## The ticket reply and the status message it becomes

your-file = your file
your-files = your files
ticket-line = Got { $name } ({ $size }) — ticket { $ticket }
ticket-reply = { $ahead ->
    [0] { $line }, queued.
    [one] { $line }, queued, { $ahead } job ahead of it.
   *[other] { $line }, queued, { $ahead } jobs ahead of it.
}
ticket-reply-crowded = { $line }, queued, more than { $cap } jobs ahead of it.
album-line = { $count ->
    [one] Got 1 file ({ $names }, { $size })
   *[other] Got { $count } files ({ $names }; { $size } in all)
} — ticket { $ticket }
album-becomes = They become one PDF, in this order.
album-question = Merge them into one PDF, in this order, or take each on its own? Unanswered for { $wait }, they are merged.
album-merge-button = Merge into one PDF
album-each-button = Each on its own
merge-opened = Ticket { $ticket } is open: send the files to merge, pictures and PDFs, in the order they go (at most { $files }, { $size } in all). Then send /done, or /cancel to drop them.
merge-still-open = Ticket { $ticket } is still taking files ({ $count ->
    [one] 1 file
   *[other] { $count } files
} so far): send more, then /done, or /cancel to drop them.
merge-file-added = { $name } added to ticket { $ticket }: { $count ->
    [one] 1 file
   *[other] { $count } files
} so far. Send more, or /done.
merge-full = { $name } was not added: ticket { $ticket } holds { $files } files, the most one merge takes. Send /done.
merge-too-big = { $name } was not added: with it, ticket { $ticket } would hold { $size }, more than the { $limit } one merge takes. Send /done.
merge-done-button = Done
merge-none-open = No merge is open. Send /merge, then the files, then /done.
merge-empty = Ticket { $ticket } was closed: no file was sent, so there is nothing to merge.
merge-dropped = Ticket { $ticket } was dropped: its files will not be merged.
merge-needs-several = merge joins several files into one PDF: send them as an album (several at once), or send /merge, then the files, then /done.
status-message =
    { $header }.
    { $line }
progress-queued = { $position ->
    [1] Queued: next in line.
   *[other] Queued: number { $position } in line.
}
progress-downloading-started = Downloading…
progress-downloading = Downloading: { $percent }% ({ $done } of { $total }).
progress-downloading-unknown-total = Downloading: { $done } so far.
progress-downloading-file-started = Downloading file { $number } of { $count }…
progress-downloading-file = Downloading file { $number } of { $count }: { $percent }% of all ({ $done } of { $total }).
progress-downloading-file-unknown-total = Downloading file { $number } of { $count }: { $done } so far.
progress-waiting-to-process = Downloaded; waiting for a free processing slot.
progress-processing = Processing…
progress-waiting-to-retry = Interrupted; trying again shortly.
progress-ready = Ready: the result is below, kept until { $until }.
progress-cancelled = Cancelled; its files are deleted.
progress-taken-apart = Each file is a ticket of its own now: { $tickets }.
progress-failed = Failed: { $reason }.

## Answers to a document

already-ticket = { $name } is already ticket { $ticket } ({ $state }).
expired-processing-again = { $ticket } expired on { $date }; processing it again.
failed-trying-again = { $name } is ticket { $ticket }, which failed before; trying again.
too-big-to-accept = { $name } is { $size }, but this bot can only take files up to { $limit }. Nothing was queued.
too-big-for-budget = { $name } is { $size }, more than this bot can work on at once (up to { $largest }). Nothing was queued.
queue-full = { $name } was not queued: { $waiting ->
    [one] { $waiting } of your files is
   *[other] { $waiting } of your files are
} already waiting in the queue, as many as this bot takes from one chat. Please send it again when some of them are done.
not-allowed = Sorry, this bot is private.
not-allowed-with-id = Sorry, this bot is private. Ask its admin to add your user id ({ $id }).
send-a-document = Send me a PDF as a file (or an image, which becomes a PDF), with what to do as its caption: optimize, shrink, split, text… /help tells more.
cannot-use = { $kind ->
        [sticker] I cannot work on stickers.
        [voice] I cannot work on voice messages.
        [audio] I cannot work on audio.
        [video] I cannot work on videos.
        [location] I cannot work on locations.
        [contact] I cannot work on contacts.
        [unreadable] I could not read that message: your Telegram app may have sent something this bot does not know yet.
       *[other] I cannot work on that kind of message.
    } { send-a-document }

## Results and failures

ready-caption = { $ticket } ready: { $name }, { $before } → { $after }. Available until { $until }.
ready-caption-no-source = { $ticket } ready: { $name }, { $after }. Available until { $until }.
result-part = Part { $part } of { $parts }. { $caption }
button-shrink-to-fit = Shrink to fit { $limit }
button-split-under = Split into parts under { $limit }
expired-early = { $ticket }: the result for { $name } had to be removed early, on { $date }, to make room. Send the file again to process it again.
failed-notice = { $ticket } failed: { $reason }.
failure-not-a-pdf = { $name } is not a PDF (the content looks like { $found })
failure-too-big = { $name } is { $size }, over the { $limit } this bot can download
failure-size-mismatch = { $name } arrived as { $real } instead of the { $declared } Telegram announced; please send it again
failure-encrypted = { $name } is protected by a password; reply to the file with “decrypt PASSWORD” to open it, or send a copy without one
failure-unreadable = { $name } is damaged and cannot be read as a PDF
failure-no-pages = { $name } has no pages
failure-result-too-big = the result for { $name } is { $size }, over the { $limit } this bot can send{ $hint }
failure-result-grew-too-big = the result for { $name } grew past the { $limit } this bot can send, so making it was stopped{ $hint }
failure-wrote-too-much = processing { $name } needed more than { $limit } of disk space, more than one run may have, so it was stopped
failure-file-unavailable = Telegram no longer has { $name }; please send it again
failure-gave-up = { $name } could not be processed after { $attempts ->
    [one] { $attempts } attempt
   *[other] { $attempts } attempts
}; please try again later
failure-source-kept-vanishing = the downloaded copy of { $name } was lost or damaged on this server { $times ->
    [one] { $times } time
   *[other] { $times } times
}; please try again later
failure-needs-too-much-memory = { $name } needs more than { $limit } of memory to process
failure-took-too-long = processing { $name } took longer than { $limit }
failure-inflates-too-much = { $name } holds compressed data that unpacks to more than { $limit }, more than this bot processes
failure-crashed = { $name } made the processing crash, so it cannot be processed
failure-tool-failed = { $tool } could not process { $name }
failure-office-unavailable = { $name } was not converted: this bot cannot convert office files (Word, Excel, PowerPoint, OpenDocument); please send it as a PDF
failure-in-part = file { $number } of the { $count } in the album: { $reason }
failure-nothing-to-merge = no file was sent after /merge, so there was nothing to merge
failure-taken-apart = its files were taken each on its own, as tickets of their own
failure-cancelled = { $name } was cancelled
failure-no-such-page = { $name } has no page { $page }: it has { $pages ->
    [one] { $pages } page
   *[other] { $pages } pages
}
failure-wrong-password = the password does not open { $name }; please check it and reply to the file with “decrypt” and the right one
failure-cannot-shrink-to = { $name } cannot be shrunk to { $target }: the smallest docket can make it is { $smallest }; try split to send it in parts
failure-page-too-big-for-parts = page { $page } of { $name } alone is { $size }, over the { $target } each part may have; try shrink first

## /status, /get, /jobs, /cancel

status-title = { $ticket } — { $name }: { $state }
status-size = Size: { $size }
status-files = Files:
status-file = { $number }. { $name } ({ $size })
status-result = Result: { $size }
status-received = Received: { $at }
status-changed = Last change: { $at }
status-available = Available until { $date }. Send the same file again to get it again.
status-expired = Expired on { $date }. Send the file again to process it again.
status-reason = Reason: { $reason }.
no-such-ticket = No such ticket: { $ticket }.
status-usage = Usage: /status 4812 or /get 4812 (the ticket number from my reply).
jobs-none = No tickets yet. Send me a PDF as a file to start.
jobs-title = Your latest tickets:
jobs-line = { $ticket } { $name } — { $state }
several-files = { $count ->
    [one] 1 file
   *[other] { $count } files
} ({ $names })
cancelled = { $ticket } cancelled: { $name } will not be processed, and its files are deleted.
cannot-cancel = { $ticket } is { $state } already; only a ticket that is not ready yet can be cancelled.
cancel-usage = Usage: /cancel 4812 (the ticket number from my reply).
retrying-for-admin = { $ticket }: { $name } is being tried again.

## /privacy and /forget

privacy =
    What I keep about you:
    • For each file you send: its name, size and type as Telegram gives them, your user and chat id, and the message ids, in this bot's database.
    • The file itself, on this bot's server, only while it is being processed.
    • The result, on this bot's server, for { $ttl } after it is ready; then it is deleted.
    • The texts I sent you, until they have been delivered and some time after.
    • The language I write to you in, for each chat: the one Telegram tells me, or the one you chose with /lang.
    Nothing is shared with anyone. /forget deletes your files, results and their names now.
forget-question = This deletes all your results and files and the names of everything you sent, now. Tickets in progress are cancelled. It cannot be undone.
forget-button = Yes, delete everything
forgotten-reason = forgotten at the person's request (/forget)
forgotten = { $jobs ->
    [0] Done: there was nothing of yours to delete.
    [one] Done: { $jobs } ticket is forgotten, with its files.
   *[other] Done: { $jobs } tickets are forgotten, with their files.
}

## /start, /help, invites

start =
    Hello! Send me a PDF as a file and I will optimize it (recompress and drop unused parts). You get a ticket number at once and the result when it is done.

    { $help }
invited =
    Welcome! You can use this bot now.

    { $help }
help =
    How it works:
    • Send a PDF as a file (up to { $download }). I answer with a ticket number right away.
    • When it is done you get the result (results up to { $upload } can be sent).
    • Results are kept for { $ttl }; sending the same file again gets it again.

    What to do is the file's caption (without one: optimize, or what /mode chose):
    { $operations }
    When a result is ready, its buttons ask for more from the same file.

    Commands:
    /status 4812 — where a ticket is
    /get 4812 — the result again, while it is kept
    /jobs — your latest tickets
    /cancel 4812 — stop a ticket that is not ready yet
    /merge — join the files you send next into one PDF, until /done
    /mode — what a file without a caption gets in this chat
    /privacy — what I keep, and for how long
    /forget — delete everything of yours now
    /lang — choose the language I write in
    /help — this text

## The command list Telegram shows (setMyCommands), one description per command

command-start = Start: what this bot does
command-help = How it works, and the commands
command-status = Where a ticket is: /status 4812
command-get = A kept result again: /get 4812
command-jobs = Your latest tickets
command-cancel = Stop a ticket that is not ready yet: /cancel 4812
command-merge = Join the next files into one PDF, until /done
command-done = Merge the files sent since /merge
command-privacy = What is kept, and for how long
command-forget = Delete everything of yours now
command-lang = Choose the language

## For admins

admins-only = Only this bot's admins can use /stats.
stats-title = docket now:
stats-jobs = Jobs: { $jobs }
stats-jobs-none = none
stats-budget = Budget: { $in-flight } in flight, of { $budget } per process
stats-oldest = Oldest waiting job: due for { $for }
stats-oldest-none = Oldest waiting job: none waiting
stats-dead-chats = Dead chats: { $n }
stats-flood-waits = 429s in the last hour: { $n }
stats-hosts = Hosts: { $hosts }
stats-hosts-none = none holding work now
delivery-alert = docket: a message to chat { $chat } could not be delivered (outbox #{ $message }): { $why }. Further failures this hour are not announced; `docket status` and the docket_messages_failed_total metric count them.
delivery-alert-about-ticket = docket: a message to chat { $chat } about ticket { $ticket } could not be delivered (outbox #{ $message }): { $why }. Further failures this hour are not announced; `docket status` and the docket_messages_failed_total metric count them.
data-folder-low-alert = docket on { $node }: the data folder has only { $free } free, below [storage] min_free ({ $min_free }). No download starts until space is freed; jobs wait, they do not fail. This is said once until space is back.

## Operations: choosing what to do
operation-optimize = optimize — smaller without any loss (the default)
operation-shrink = shrink — much smaller: images downsampled and recompressed (for scans and photos); shrink 10MB — as much as it takes to fit in 10 MB
operation-split = split — each page as its own PDF, in a ZIP; split 1-3,7 — those ranges; split 45MB — parts under 45 MB, sent one by one
operation-pages = pages 2-10 — only those pages, as one PDF
operation-text = text — the text of every page, as a .txt file
operation-info = info — pages, size, version, fonts and images, as a message
operation-rotate = rotate 90 — turn every page; rotate 180 2,4 — only pages 2 and 4
operation-decrypt = decrypt PASSWORD — open a password-protected PDF and save it without the password
operation-ocr = ocr — add a searchable text layer to a scan; ocr rus+eng — in those languages
operation-topdf = topdf — a picture (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) or an office document (Word, Excel, PowerPoint, OpenDocument, RTF) as a PDF
operation-merge = merge — the files of an album (pictures and PDFs sent together) as one PDF, in their order
caption-not-understood = I did not start anything: { $problem }. Send the file again with one of these as its caption (or without a caption for your default, see /mode):
    { $operations }
caption-names-nothing = the caption names no operation
caption-unknown-word = "{ $word }" is not an operation
caption-bad-arguments = { $operation }: { $problem }
delete-the-password = Your password is kept only until this job ends. Please delete the message that carries it.
password-message-deleted = Your password is kept sealed only until this job ends, and I delete your message that carries it as soon as the job has read it.
mode-now-own = Documents sent without a caption get { $operation } (this chat's choice). To change it: /mode followed by one of { $modes }.
mode-now-default = Documents sent without a caption get { $operation } (the bot's default). To change it: /mode followed by one of { $modes }.
mode-set = Done: documents sent here without a caption now get { $operation }.
mode-unknown = "{ $word }" cannot be a default. Choose one of { $modes }.
takes-a-pdf = a PDF
takes-what-topdf-takes = a picture (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) or an office document (Word, Excel, PowerPoint, OpenDocument, RTF)
wrong-format = { $operation } takes { $takes }; this is { $found }
wrong-format-send-topdf = { $operation } takes { $takes }; this is { $found }: send it with the caption topdf, or without a caption
wrong-format-send-caption = { $operation } takes { $takes }; this is { $found }: send it with a caption such as optimize or shrink
declared-but-is = sent as { $declared }, but it is { $found }
hint-shrink-or-split = ; try shrink for a smaller file, or split it into parts
hint-split = ; try split to send it in parts
hint-smaller-parts = ; try split with fewer pages per part, such as split 1-20,21-40
info-message = { $name }:
    { $facts }
ocr-not-set-up = OCR is not set up on this bot
will-run = It will get: { $operation }.
run-reply = { $ticket } { $operation }: { $ahead ->
    [0] queued.
    [one] queued, 1 job ahead of it.
   *[other] queued, { $ahead } jobs ahead of it.
}
run-reply-many = { $ticket } { $operation }: queued, more than { $cap } jobs ahead of it.
pdf-only = { $operation } takes a PDF
pdf-only-send-topdf = { $operation } takes a PDF; send the image with the caption topdf to make it one
failure-wrong-format-pdf = { $name } is not a PDF (the content looks like { $found }): { $why }
failure-not-processed = { $name } was not processed: { $why }
failure-not-set-up = { $name } was not processed: { $operation } is not set up on this bot

## info: the facts about a document
info-pages = Pages: { $pages }
info-pages-unknown = Pages: unknown without the password
info-paper-landscape = { $paper } landscape
info-page-size = Page size: { $paper }{ $width_mm } × { $height_mm } mm ({ $width_pt } × { $height_pt } pt)
info-version = PDF version: { $version }
info-title = Title: { $value }
info-author = Author: { $value }
info-creator = Creator: { $value }
info-producer = Producer: { $value }
info-encryption-none = Encryption: none
info-encryption-owner = Encryption: an owner password only (it opens, with restrictions)
info-encryption-user = Encryption: it needs a password to open
info-images = Images: { $images }
info-fonts-none = Fonts: none
info-fonts = Fonts: { $fonts }
info-fonts-and-more = { $fonts }, and { $more } more
info-font-not-embedded = { $font } (not embedded)
info-size = Size: { $size }
info-sha256 = SHA-256: { $sha256 }

## text: lines in the text file
page-without-text = [page { $page } has no text: it is an image; try ocr]
text-cut-short = [the text stops before page { $page }: it passed { $limit }]

## What a file is, by its detected format
format = { $description }
