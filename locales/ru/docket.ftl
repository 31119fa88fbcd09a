# Сообщения docket по-русски. Те же идентификаторы и переменные, что в locales/en/docket.ftl.

## Язык

language-name = Русский
lang-question = Выберите язык, на котором я буду вам писать:
lang-chosen = Хорошо, теперь я пишу по-русски.

## Размеры

decimal-separator = ,
size-b = { $number } Б
size-kb = { $number } КБ
size-mb = { $number } МБ
size-gb = { $number } ГБ
size-tb = { $number } ТБ
size-pb = { $number } ПБ
size-eb = { $number } ЭБ
size-kib = { $number } КиБ
size-mib = { $number } МиБ
size-gib = { $number } ГиБ
size-tib = { $number } ТиБ
size-pib = { $number } ПиБ
size-eib = { $number } ЭиБ
size-unknown = размер неизвестен
size-unknown-short = неизвестен

## Длительности

duration-days = { $n } { $n ->
    [one] день
    [few] дня
   *[many] дней
}
duration-hours = { $n } ч
duration-minutes = { $n } мин
duration-seconds = { $n } с
limit-hours = { $n } ч
limit-minutes = { $n } мин
limit-seconds = { $n } с

## Состояния заявки

state-accepted = в очереди
state-fetched = загружена, ждёт обработки
state-processing = обрабатывается
state-ready = готова
state-failed = не удалась
state-expired = срок хранения истёк

## Ответ на документ и сообщение о ходе работы

your-file = ваш файл
your-files = ваши файлы
ticket-line = Получен { $name } ({ $size }) — заявка { $ticket }
ticket-reply = { $ahead ->
    [0] { $line }, в очереди.
    [one] { $line }, в очереди, перед ней { $ahead } задание.
    [few] { $line }, в очереди, перед ней { $ahead } задания.
   *[many] { $line }, в очереди, перед ней { $ahead } заданий.
}
ticket-reply-crowded = { $line }, в очереди, перед ней больше { $cap } заданий.
album-line = { $count ->
    [one] Получен { $count } файл ({ $names }, { $size })
    [few] Получено { $count } файла ({ $names }; всего { $size })
   *[many] Получено { $count } файлов ({ $names }; всего { $size })
} — заявка { $ticket }
album-becomes = Из них получится один PDF, в этом порядке.
album-question = Объединить их в один PDF, в этом порядке, или обработать каждый отдельно? Если не ответить за { $wait }, они будут объединены.
album-merge-button = Объединить в один PDF
album-each-button = Каждый отдельно
merge-opened = Заявка { $ticket } открыта: присылайте файлы для объединения, картинки и PDF, в нужном порядке (не больше { $files }, всего до { $size }). Затем пришлите /done, или /cancel, чтобы отказаться.
merge-still-open = Заявка { $ticket } ещё принимает файлы (пока { $count ->
    [one] { $count } файл
    [few] { $count } файла
   *[many] { $count } файлов
}): пришлите ещё, затем /done, или /cancel, чтобы отказаться.
merge-file-added = { $name } добавлен в заявку { $ticket }: пока { $count ->
    [one] { $count } файл
    [few] { $count } файла
   *[many] { $count } файлов
}. Пришлите ещё или /done.
merge-full = { $name } не добавлен: в заявке { $ticket } уже { $files } файлов, больше одно объединение не берёт. Пришлите /done.
merge-too-big = { $name } не добавлен: с ним в заявке { $ticket } было бы { $size }, больше { $limit }, которые берёт одно объединение. Пришлите /done.
merge-done-button = Готово
merge-none-open = Объединение не открыто. Пришлите /merge, затем файлы, затем /done.
merge-empty = Заявка { $ticket } закрыта: файлов не было, объединять нечего.
merge-dropped = Заявка { $ticket } отменена: её файлы не будут объединены.
merge-needs-several = merge объединяет несколько файлов в один PDF: пришлите их альбомом (несколько сразу) или пришлите /merge, затем файлы, затем /done.
status-message =
    { $header }.
    { $line }
progress-queued = { $position ->
    [1] В очереди: следующая.
   *[other] В очереди: { $position }-я по счёту.
}
progress-downloading-started = Загружаю…
progress-downloading = Загружаю: { $percent }% ({ $done } из { $total }).
progress-downloading-unknown-total = Загружаю: пока { $done }.
progress-downloading-file-started = Загружаю файл { $number } из { $count }…
progress-downloading-file = Загружаю файл { $number } из { $count }: { $percent }% от всех ({ $done } из { $total }).
progress-downloading-file-unknown-total = Загружаю файл { $number } из { $count }: пока { $done }.
progress-waiting-to-process = Загружено; жду свободного места для обработки.
progress-processing = Обрабатываю…
progress-waiting-to-retry = Прервалось; скоро попробую снова.
progress-ready = Готово: результат ниже, хранится до { $until }.
progress-cancelled = Отменено; файлы удалены.
progress-taken-apart = Теперь у каждого файла своя заявка: { $tickets }.
progress-failed = Не удалось: { $reason }.

## Ответы на документ

already-ticket = { $name } — это уже заявка { $ticket } ({ $state }).
expired-processing-again = Срок хранения { $ticket } истёк { $date }; обрабатываю заново.
failed-trying-again = { $name } — это заявка { $ticket }, которая раньше не удалась; пробую снова.
too-big-to-accept = { $name } весит { $size }, а этот бот принимает файлы только до { $limit }. В очередь ничего не поставлено.
too-big-for-budget = { $name } весит { $size } — больше, чем этот бот может обработать за раз (до { $largest }). В очередь ничего не поставлено.
queue-full = { $name } не поставлен в очередь: { $waiting ->
    [one] { $waiting } ваш файл уже ждёт
    [few] { $waiting } ваших файла уже ждут
   *[many] { $waiting } ваших файлов уже ждут
} в очереди — столько, сколько этот бот берёт от одного чата. Пришлите его снова, когда часть из них будет готова.
not-allowed = Извините, это закрытый бот.
not-allowed-with-id = Извините, это закрытый бот. Попросите его администратора добавить ваш id пользователя ({ $id }).
send-a-document = Пришлите мне PDF файлом (или картинку — она станет PDF), а в подписи — что сделать: optimize, shrink, split, text… Подробнее — /help.
cannot-use = { $kind ->
        [sticker] Со стикерами я не работаю.
        [voice] С голосовыми сообщениями я не работаю.
        [audio] С аудио я не работаю.
        [video] С видео я не работаю.
        [location] С геопозицией я не работаю.
        [contact] С контактами я не работаю.
        [unreadable] Я не смог прочитать это сообщение: возможно, ваше приложение Telegram прислало то, чего этот бот ещё не знает.
       *[other] С такими сообщениями я не работаю.
    } { send-a-document }

## Результаты и ошибки

ready-caption = { $ticket } готова: { $name }, { $before } → { $after }. Доступна до { $until }.
ready-caption-no-source = { $ticket } готова: { $name }, { $after }. Доступна до { $until }.
result-part = Часть { $part } из { $parts }. { $caption }
button-shrink-to-fit = Сжать до { $limit }
button-split-under = Разбить на части до { $limit }
expired-early = { $ticket }: результат для { $name } пришлось удалить раньше срока, { $date }, чтобы освободить место. Пришлите файл снова, чтобы обработать его заново.
failed-notice = { $ticket } не удалась: { $reason }.
failure-not-a-pdf = { $name } — не PDF (по содержимому это { $found })
failure-too-big = { $name } весит { $size }, больше { $limit }, которые этот бот может загрузить
failure-size-mismatch = { $name } пришёл размером { $real } вместо { $declared }, о которых сообщил Telegram; пришлите его снова
failure-encrypted = { $name } защищён паролем; ответьте на файл сообщением «decrypt ПАРОЛЬ», чтобы открыть его, или пришлите копию без пароля
failure-unreadable = { $name } повреждён и не читается как PDF
failure-no-pages = в { $name } нет страниц
failure-result-too-big = результат для { $name } весит { $size }, больше { $limit }, которые этот бот может отправить{ $hint }
failure-result-grew-too-big = результат для { $name } превысил { $limit }, которые этот бот может отправить, поэтому работа над ним остановлена{ $hint }
failure-wrote-too-much = обработке { $name } понадобилось больше { $limit } места на диске — больше, чем можно одной задаче, поэтому она остановлена
failure-file-unavailable = у Telegram больше нет { $name }; пришлите его снова
failure-gave-up = { $name } не удалось обработать за { $attempts } { $attempts ->
    [one] попытку
    [few] попытки
   *[many] попыток
}; попробуйте позже
failure-source-kept-vanishing = загруженная копия { $name } терялась или повреждалась на этом сервере { $times } { $times ->
    [one] раз
    [few] раза
   *[many] раз
}; попробуйте позже
failure-needs-too-much-memory = для обработки { $name } нужно больше { $limit } памяти
failure-took-too-long = обработка { $name } заняла больше { $limit }
failure-inflates-too-much = в { $name } есть сжатые данные, которые распаковываются больше чем в { $limit } — больше, чем обрабатывает этот бот
failure-crashed = { $name } вызвал сбой обработки, поэтому его нельзя обработать
failure-tool-failed = { $tool } не смог обработать { $name }
failure-office-unavailable = { $name } не преобразован: этот бот не умеет преобразовывать офисные файлы (Word, Excel, PowerPoint, OpenDocument); пришлите его в PDF
failure-in-part = файл { $number } из { $count } в альбоме: { $reason }
failure-nothing-to-merge = после /merge не пришло ни одного файла, объединять было нечего
failure-taken-apart = файлы обработаны каждый отдельно, по своим заявкам
failure-cancelled = { $name } отменён
failure-no-such-page = в { $name } нет страницы { $page }: в нём { $pages ->
    [one] { $pages } страница
    [few] { $pages } страницы
   *[many] { $pages } страниц
}
failure-wrong-password = пароль не открывает { $name }; проверьте его и ответьте на файл сообщением «decrypt» с верным паролем
failure-cannot-shrink-to = { $name } не сжать до { $target }: меньше всего получается { $smallest }; попробуйте split, чтобы отправить его частями
failure-page-too-big-for-parts = страница { $page } файла { $name } одна весит { $size }, больше { $target }, допустимых для части; сначала попробуйте shrink

## /status, /get, /jobs, /cancel

status-title = { $ticket } — { $name }: { $state }
status-size = Размер: { $size }
status-files = Файлы:
status-file = { $number }. { $name } ({ $size })
status-result = Результат: { $size }
status-received = Получена: { $at }
status-changed = Последнее изменение: { $at }
status-available = Доступна до { $date }. Пришлите тот же файл снова, чтобы получить её ещё раз.
status-expired = Срок хранения истёк { $date }. Пришлите файл снова, чтобы обработать его заново.
status-reason = Причина: { $reason }.
no-such-ticket = Нет такой заявки: { $ticket }.
status-usage = Как пользоваться: /status 4812 или /get 4812 (номер заявки из моего ответа).
jobs-none = Заявок пока нет. Пришлите мне PDF файлом, чтобы начать.
jobs-title = Ваши последние заявки:
jobs-line = { $ticket } { $name } — { $state }
several-files = { $count ->
    [one] { $count } файл
    [few] { $count } файла
   *[many] { $count } файлов
} ({ $names })
cancelled = { $ticket } отменена: { $name } не будет обработан, его файлы удалены.
cannot-cancel = { $ticket } уже { $state }; отменить можно только заявку, которая ещё не готова.
cancel-usage = Как пользоваться: /cancel 4812 (номер заявки из моего ответа).
retrying-for-admin = { $ticket }: { $name } обрабатывается снова.

## /privacy и /forget

privacy =
    Что я храню о вас:
    • Для каждого присланного файла: его название, размер и тип, как их сообщает Telegram, ваш id пользователя и чата и id сообщений — в базе данных этого бота.
    • Сам файл — на сервере этого бота, только пока он обрабатывается.
    • Результат — на сервере этого бота, { $ttl } после готовности; затем он удаляется.
    • Тексты, которые я вам отправил, — пока они не доставлены и ещё некоторое время.
    • Язык, на котором я пишу вам, для каждого чата: тот, что сообщает Telegram, или выбранный вами через /lang.
    Ничего ни с кем не передаётся. /forget сейчас же удаляет ваши файлы, результаты и их названия.
forget-question = Это сейчас же удалит все ваши результаты и файлы и названия всего, что вы присылали. Заявки в работе будут отменены. Отменить это нельзя.
forget-button = Да, удалить всё
forgotten-reason = забыта по просьбе человека (/forget)
forgotten = { $jobs ->
    [0] Готово: удалять было нечего.
    [one] Готово: { $jobs } заявка забыта вместе с файлами.
    [few] Готово: { $jobs } заявки забыты вместе с файлами.
   *[many] Готово: { $jobs } заявок забыто вместе с файлами.
}

## /start, /help, приглашения

start =
    Здравствуйте! Пришлите мне PDF файлом, и я его оптимизирую (пережму и уберу неиспользуемые части). Номер заявки вы получите сразу, а результат — когда он будет готов.

    { $help }
invited =
    Добро пожаловать! Теперь вы можете пользоваться этим ботом.

    { $help }
help =
    Как это работает:
    • Пришлите PDF файлом (до { $download }). Я сразу отвечу номером заявки.
    • Когда всё будет готово, вы получите результат (отправить я могу результаты до { $upload }).
    • Результаты хранятся { $ttl }; если прислать тот же файл снова, вы получите их ещё раз.

    Что сделать — это подпись к файлу (без подписи: optimize или то, что выбрано через /mode):
    { $operations }
    Когда результат готов, его кнопки просят ещё что-то из того же файла.

    Команды:
    /status 4812 — где сейчас заявка
    /get 4812 — результат ещё раз, пока он хранится
    /jobs — ваши последние заявки
    /cancel 4812 — остановить заявку, которая ещё не готова
    /merge — объединить следующие файлы в один PDF, до /done
    /mode — что получает файл без подписи в этом чате
    /privacy — что я храню и как долго
    /forget — удалить всё ваше сейчас же
    /lang — выбрать язык, на котором я пишу
    /help — этот текст

## Список команд для Telegram (setMyCommands)

command-start = Начало: что умеет этот бот
command-help = Как это работает и какие есть команды
command-status = Где заявка: /status 4812
command-get = Результат ещё раз: /get 4812
command-jobs = Ваши последние заявки
command-cancel = Остановить заявку, которая ещё не готова: /cancel 4812
command-merge = Объединить следующие файлы в один PDF, до /done
command-done = Объединить файлы, присланные после /merge
command-privacy = Что хранится и как долго
command-forget = Удалить всё ваше сейчас же
command-lang = Выбрать язык

## Для администраторов

admins-only = Пользоваться /stats могут только администраторы этого бота.
stats-title = docket сейчас:
stats-jobs = Заданий: { $jobs }
stats-jobs-none = нет
stats-budget = Бюджет: { $in-flight } в работе из { $budget } на процесс
stats-oldest = Дольше всех ждёт задание: { $for }
stats-oldest-none = Дольше всех ждёт задание: никто не ждёт
stats-dead-chats = Недоступных чатов: { $n }
stats-flood-waits = Ответов 429 за последний час: { $n }
stats-hosts = Хосты: { $hosts }
stats-hosts-none = сейчас ни один не держит работу
delivery-alert = docket: сообщение в чат { $chat } не удалось доставить (outbox #{ $message }): { $why }. Об остальных сбоях в этот час сообщений не будет; их считают `docket status` и метрика docket_messages_failed_total.
delivery-alert-about-ticket = docket: сообщение в чат { $chat } о заявке { $ticket } не удалось доставить (outbox #{ $message }): { $why }. Об остальных сбоях в этот час сообщений не будет; их считают `docket status` и метрика docket_messages_failed_total.
data-folder-low-alert = docket на { $node }: в папке данных свободно только { $free }, меньше [storage] min_free ({ $min_free }). Загрузки не начнутся, пока не освободится место; заявки ждут, они не отменяются. Это сообщение не повторится, пока место не вернётся.

## Операции: что сделать с файлом
operation-optimize = optimize — меньше без потерь (по умолчанию)
operation-shrink = shrink — намного меньше: картинки уменьшены и пережаты (для сканов и фото); shrink 10MB — сколько нужно, чтобы уложиться в 10 МБ
operation-split = split — каждая страница отдельным PDF, в ZIP; split 1-3,7 — эти диапазоны; split 45MB — части меньше 45 МБ, по одной
operation-pages = pages 2-10 — только эти страницы, одним PDF
operation-text = text — текст всех страниц файлом .txt
operation-info = info — страницы, размер, версия, шрифты и картинки, сообщением
operation-rotate = rotate 90 — повернуть все страницы; rotate 180 2,4 — только страницы 2 и 4
operation-decrypt = decrypt ПАРОЛЬ — открыть PDF с паролем и сохранить без пароля
operation-ocr = ocr — добавить к скану слой текста для поиска; ocr rus+eng — на этих языках
operation-topdf = topdf — картинка (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) или офисный документ (Word, Excel, PowerPoint, OpenDocument, RTF) в PDF
operation-merge = merge — файлы альбома (картинки и PDF, отправленные вместе) одним PDF, по порядку
caption-not-understood = Я ничего не начал: { $problem }. Пришлите файл ещё раз с одной из этих подписей (или без подписи — тогда по умолчанию, см. /mode):
    { $operations }
caption-names-nothing = в подписи нет операции
caption-unknown-word = «{ $word }» — не операция
caption-bad-arguments = { $operation }: { $problem }
delete-the-password = Пароль хранится только до конца этого задания. Пожалуйста, удалите сообщение, в котором он есть.
password-message-deleted = Пароль хранится в зашифрованном виде только до конца этого задания, а ваше сообщение с ним я удалю, как только задание его прочитает.
mode-now-own = Документы без подписи получают { $operation } (выбор этого чата). Чтобы изменить: /mode и одно из: { $modes }.
mode-now-default = Документы без подписи получают { $operation } (по умолчанию у бота). Чтобы изменить: /mode и одно из: { $modes }.
mode-set = Готово: документы без подписи здесь теперь получают { $operation }.
mode-unknown = «{ $word }» не может быть по умолчанию. Выберите одно из: { $modes }.
takes-a-pdf = PDF
takes-what-topdf-takes = картинку (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) или офисный документ (Word, Excel, PowerPoint, OpenDocument, RTF)
wrong-format = { $operation } принимает { $takes }; а это { $found }
wrong-format-send-topdf = { $operation } принимает { $takes }; а это { $found }: пришлите его с подписью topdf или без подписи
wrong-format-send-caption = { $operation } принимает { $takes }; а это { $found }: пришлите его с подписью, например optimize или shrink
declared-but-is = прислан как { $declared }, но это { $found }
hint-shrink-or-split = ; попробуйте shrink, чтобы файл стал меньше, или split, чтобы разбить его на части
hint-split = ; попробуйте split, чтобы прислать его частями
hint-smaller-parts = ; попробуйте split с меньшим числом страниц в части, например split 1-20,21-40
info-message = { $name }:
    { $facts }
ocr-not-set-up = распознавание текста (OCR) на этом боте не настроено
will-run = Будет сделано: { $operation }.
run-reply = { $ticket } { $operation }: { $ahead ->
    [0] в очереди.
    [one] в очереди, впереди { $ahead } задание.
    [few] в очереди, впереди { $ahead } задания.
   *[many] в очереди, впереди { $ahead } заданий.
}
run-reply-many = { $ticket } { $operation }: в очереди, впереди больше { $cap } заданий.
pdf-only = { $operation } принимает только PDF
pdf-only-send-topdf = { $operation } принимает только PDF; пришлите картинку с подписью topdf, чтобы сделать из неё PDF
failure-wrong-format-pdf = { $name } — не PDF (по содержимому это { $found }): { $why }
failure-not-processed = { $name } не обработан: { $why }
failure-not-set-up = { $name } не обработан: { $operation } на этом боте не настроен

## info: сведения о документе
info-pages = Страниц: { $pages }
info-pages-unknown = Страниц: не узнать без пароля
info-paper-landscape = { $paper }, альбомная
info-page-size = Размер страницы: { $paper }{ $width_mm } × { $height_mm } мм ({ $width_pt } × { $height_pt } pt)
info-version = Версия PDF: { $version }
info-title = Название: { $value }
info-author = Автор: { $value }
info-creator = Создан в: { $value }
info-producer = PDF сделан в: { $value }
info-encryption-none = Шифрование: нет
info-encryption-owner = Шифрование: только пароль владельца (открывается, с ограничениями)
info-encryption-user = Шифрование: для открытия нужен пароль
info-images = Картинок: { $images }
info-fonts-none = Шрифты: нет
info-fonts = Шрифты: { $fonts }
info-fonts-and-more = { $fonts } и ещё { $more }
info-font-not-embedded = { $font } (не встроен)
info-size = Размер: { $size }
info-sha256 = SHA-256: { $sha256 }

## text: строки в текстовом файле
page-without-text = [на странице { $page } нет текста: это картинка; попробуйте ocr]
text-cut-short = [текст обрывается перед страницей { $page }: он превысил { $limit }]

## Что за файл, по распознанному формату
format = { $label ->
    [pdf] документ PDF
    [unknown] файл неизвестного формата
    [text] текстовый файл
    [html] страница HTML
    [zip] архив ZIP
    [png] картинка PNG
    [jpeg] картинка JPEG
    [gif] картинка GIF
    [webp] картинка WebP
    [tiff] картинка TIFF
    [bmp] картинка BMP
    [heif] картинка HEIF
    [avif] картинка AVIF
    [doc] документ Word (DOC)
    [xls] таблица Excel (XLS)
    [epub] книга EPUB
    [svg] картинка SVG
    [rar] архив RAR
    [gzip] архив GZIP
    [docx] документ Word (DOCX)
    [xlsx] таблица Excel (XLSX)
    [pptx] презентация PowerPoint (PPTX)
    [odt] документ OpenDocument (ODT)
    [djvu] документ DjVu
   *[other] файл { $upper }
}
