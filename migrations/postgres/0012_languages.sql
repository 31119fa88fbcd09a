-- The language docket writes to each chat in (src/texts.rs): the last /lang choice made in the
-- chat (chosen = 1), or, until someone chooses, the Telegram language_code of whoever last wrote
-- to docket there (chosen = 0). A code, such as 'ru' or 'en-GB', as Telegram or /lang gave it.
CREATE TABLE chat_languages (
    chat_id       BIGINT  PRIMARY KEY,
    language_code TEXT    NOT NULL,
    chosen        BIGINT  NOT NULL CHECK (chosen IN (0, 1)),
    updated_at    BIGINT  NOT NULL
);
