// The store's statement helpers shared by its files (store.cpp, store_schema.cpp,
// store_document_index.cpp); used only on the store's thread, with its connection.
#pragma once

#include <QSqlDatabase>
#include <QSqlQuery>
#include <QString>
#include <QStringList>

#include <optional>

namespace hearth::app::detail {

// A failed statement or transaction, with the text SQLite gave.
struct SqlFailure {
    QString message;
};

// What `what` was and why the statement failed; logged as a warning.
SqlFailure sqlFailure(const QSqlQuery& q, const QString& what);

// Runs each statement in order; the first failure stops it.
std::optional<SqlFailure> runStatements(const QSqlDatabase& db, const QStringList& statements);

// Brings the schema from PRAGMA user_version up to `target`, one version per transaction (a
// database written by a newer Hearth is refused).
std::optional<SqlFailure> migrateSchema(QSqlDatabase db, int target);

} // namespace hearth::app::detail
