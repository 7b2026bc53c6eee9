"""The catalog of policy families: enterprise runbooks and compliance rules whose key fact changes across
versions. Text only; all structure (versions, dates, sources, rumours, queries) is decided by
``data_gen.generator`` from the config and the seed.

Placeholders: ``{v}`` is the value rendered with the family's ``phrase`` (e.g. "25 days"),
``{date}`` a human date ("14 March 2024"), ``{title}`` the family title, ``{topic}`` the family topic.

Length rules (checked by tests/test_families.py): every policy and runbook section, rendered with any
value of the family, is 101..199 characters, so that the sentence-grouping chunker (~200 characters)
makes exactly one chunk per section; every chatter message is at most 199 characters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    key: str  # snake_case, unique
    title: str  # document title, e.g. "Annual Leave Policy"
    topic: str  # short noun phrase used in chatter, e.g. "annual leave allowance"
    phrase: str  # how a value reads, with {n}: "{n} days", "${n} per night", "every {n} days"
    values: tuple[int, ...]  # >= 6 distinct plausible values, in increasing order
    fact: tuple[str, ...]  # >= 2 templates stating the value ({v}); one section each
    scope: tuple[str, ...]  # >= 2: who/what the policy covers; no value
    procedure: tuple[str, ...]  # >= 2: how to request/apply/comply; no value
    contacts: tuple[str, ...]  # >= 2: owner team, where to ask, review cadence; no value
    questions: tuple[str, ...]  # >= 6 paraphrases asking for the value in force now; no value in them
    chatter_questions: tuple[str, ...]  # >= 4: how people ask in chat (slack, email); never used as benchmark queries
    historical_questions: tuple[str, ...]  # >= 2 asking what the value was on {date}
    runbook_title: str  # the operational document that implements the policy
    runbook_step: tuple[str, ...]  # >= 2 templates: the configuration step that applies the value ({v})
    runbook_prereq: tuple[str, ...]  # >= 2: prerequisites / access needed; no value
    runbook_verify: tuple[str, ...]  # >= 2: how to verify the change took effect; no value
    dependent_questions: tuple[str, ...]  # >= 3 asking what to configure in the system; no value

    def render(self, n: int) -> str:
        return self.phrase.format(n=n)


# Chatter: low-authority messages (slack, email, meeting notes). Placeholders: {question} is filled from the
# family's chatter_questions (informal, as people ask in chat; never the benchmark's test queries, which
# come from questions), {topic}, {title}, {v}, {person}.
# Rumours state a (wrong) value and are phrased close to how people ask; neutral chatter is on the same
# topic, phrased like a question, but states no value.
# Every rendered chatter message stays at most 199 characters for every family, question, value and
# person, and every sentence in it starts with a capital letter (the chatter questions do too).
RUMOR_TEMPLATES: tuple[str, ...] = (
    "Q: {question} A: pretty sure it's {v} now, {person} said so in standup.",
    "{question} I heard it changed to {v} last week, can someone confirm?",
    "Re: {question} Yes, it's {v} as far as I know. {person} mentioned it at the all-hands.",
    "Meeting notes, {person} asked: {question} Answer from the room was {v}, still to confirm.",
    "{question} Asking because {person} told me it's {v} but the wiki looks old.",
    "Quick check. {question} My team has been assuming {v} for a while now.",
    "FYI the {topic} is {v} now, at least that's what {person} told me.",
    "Heads up, {person} says the {topic} went to {v}. Not sure the doc is updated yet.",
    "Pretty sure the {topic} is {v} these days, my manager said so last quarter.",
)

NEUTRAL_TEMPLATES: tuple[str, ...] = (
    "Does anyone know? {question}",
    "{question} Asking for a new joiner on my team.",
    "{question} The wiki page looks outdated and I can't tell which version is current.",
    "Has the {topic} changed recently? I saw a thread about it but can't find it now.",
    "Can someone point me to the latest {title}? {question}",
    "Meeting notes, {person} asked: {question} Action item is to check with the policy owner.",
    "Hey {person}, do you know where the current {title} lives? Someone asked me about the {topic}.",
)

PEOPLE: tuple[str, ...] = (
    "Priya",
    "Marco",
    "Aisha",
    "Tom",
    "Keiko",
    "Lucas",
    "Fatima",
    "Daniel",
    "Sofia",
    "Ben",
)

# One Family(...) block per policy. Within a family the fact templates are near-paraphrases of each other
# (they are versions of the same fact chunk), so that only the number tells versions apart. Sections other
# than fact and runbook_step carry no digits and no number words, so they never state a value.
FAMILIES: tuple[Family, ...] = (
    Family(
        key="annual_leave",
        title="Annual Leave Policy",
        topic="annual leave allowance",
        phrase="{n} days",
        values=(20, 22, 24, 25, 27, 30),
        fact=(
            "Full-time employees are entitled to an annual leave allowance of {v} of paid leave per calendar year, accrued monthly from the first day of employment.",
            "The annual leave allowance for full-time employees is {v} of paid leave per calendar year, accruing monthly from the start date.",
            "Each full-time employee receives an annual leave allowance of {v} of paid leave in every calendar year, accruing monthly from the first working day.",
        ),
        scope=(
            "This annual leave policy covers all employees on permanent contracts; part-time staff receive a pro-rated share of the full-time allowance.",
            "Contractors, interns and agency workers are not covered by the annual leave policy and should follow the leave terms in their own agreements.",
        ),
        procedure=(
            "Annual leave requests must be submitted in Workday and approved by your line manager before any travel or bookings are confirmed.",
            "Unused annual leave may be carried over into the next quarter with manager approval; any remaining balance then expires without payment.",
        ),
        contacts=(
            "Questions about annual leave go to the People Operations team in the #ask-people channel; the policy is reviewed every year by HR.",
            "The {title} is owned by People Operations; escalate annual leave disputes to your HR business partner through the HR help desk.",
        ),
        questions=(
            "How many days of annual leave do full-time employees get?",
            "What's the yearly vacation allowance?",
            "How much paid time off do I get per year?",
            "How many vacation days do we get each year?",
            "What is our current holiday entitlement?",
            "How many PTO days does a full-time employee accrue per year?",
        ),
        chatter_questions=(
            "Anyone know how many vacation days we get per year now?",
            "How much PTO do full-timers accrue these days?",
            "Quick q: what's our annual leave entitlement at the moment?",
            "Is the holiday allowance still the same as last year?",
            "Did HR change how much annual leave we get?",
        ),
        historical_questions=(
            "How many days of annual leave did full-time staff get on {date}?",
            "What was the yearly vacation allowance as of {date}?",
        ),
        runbook_title="Workday Leave Plan Configuration Runbook",
        runbook_step=(
            "In Workday, open the Annual Leave time off plan and set the yearly accrual for full-time employees to {v}, then save the plan version.",
            "Update the Workday time off plan so that full-time workers accrue {v} of annual leave per year, keeping the monthly accrual schedule.",
        ),
        runbook_prereq=(
            "You need the Absence Partner security role in Workday and an approved change ticket from People Operations before editing leave plans.",
            "Before changing the annual leave accrual, export the current time off plan settings from Workday and attach them to the change ticket.",
        ),
        runbook_verify=(
            "Run the Workday time off balance report for a sample of full-time employees and confirm the projected annual leave matches the policy.",
            "Ask a test employee to open the Workday absence page and check that the annual leave balance projection reflects the new accrual.",
        ),
        dependent_questions=(
            "What accrual should be configured in Workday for full-time employees?",
            "Which yearly entitlement goes into the Workday time off plan?",
            "What annual balance should the Workday leave plan grant to full-time staff?",
        ),
    ),
    Family(
        key="meal_expense_limit",
        title="Meal Expense Policy",
        topic="daily meal allowance",
        phrase="${n} per day",
        values=(40, 50, 55, 60, 75, 90),
        fact=(
            "While travelling on company business, employees may claim a daily meal allowance of up to {v}, covering breakfast, lunch and dinner combined.",
            "The daily meal allowance for employees travelling on company business is {v}, covering breakfast, lunch and dinner combined.",
            "Employees on company business travel can expense meals up to a daily meal allowance of {v}, which covers breakfast, lunch and dinner together.",
        ),
        scope=(
            "The meal expense policy applies to all employees and contractors travelling on approved company business, in any country or city.",
            "Client entertainment and team events are outside the scope of the daily meal allowance and follow the separate hospitality rules.",
        ),
        procedure=(
            "Submit meal expenses in Concur promptly after the trip, attaching an itemised receipt for every meal you claim against the allowance.",
            "Alcohol is never reimbursed under the meal expense policy, and meal costs above the daily allowance are paid by the employee.",
        ),
        contacts=(
            "The Finance expenses team owns the {title}; ask meal allowance questions in the #expenses channel or raise a Concur support ticket.",
            "Questions about meal expenses and the daily allowance go to Finance Operations, who review the meal expense policy each fiscal year.",
        ),
        questions=(
            "What is the daily meal allowance when travelling?",
            "How much can I expense for food per day on a business trip?",
            "What's the per diem for meals?",
            "What is the maximum I can claim for meals in a day?",
            "How much does the company reimburse for dining each day on a trip?",
            "What's the daily cap on food expenses?",
        ),
        chatter_questions=(
            "What can we spend on food per day when we're on the road?",
            "Anyone remember the daily meal cap for work trips?",
            "Is the per diem for meals still the same, or did finance bump it?",
            "How much can I expense for lunch and dinner while travelling for work?",
            "Quick q: what's the daily meal allowance on business travel these days?",
        ),
        historical_questions=(
            "What was the daily meal allowance on {date}?",
            "How much could employees expense for meals per day as of {date}?",
        ),
        runbook_title="Concur Expense Limit Configuration Runbook",
        runbook_step=(
            "In Concur Expense, edit the Meals expense type in the travel policy and set the daily limit to {v}, then publish the policy change.",
            "Set the Concur travel policy limit for the Meals expense type to {v}, so that claims above the daily allowance are flagged for review.",
        ),
        runbook_prereq=(
            "You need the Concur Expense Policy Administrator role and a Finance-approved change request before editing meal expense limits.",
            "Before editing the meal limit, export the current Concur expense type settings and attach the export to the Finance change request.",
        ),
        runbook_verify=(
            "Create a test expense report in Concur with a meal above the new daily allowance and confirm the audit rule raises a policy warning.",
            "Check the Concur audit rule report the next morning and confirm that meal claims are compared against the updated daily limit.",
        ),
        dependent_questions=(
            "What daily meal limit should be set in Concur?",
            "Which amount goes into the Concur meal expense type cap?",
            "What per-day limit should the Concur audit rule for meals enforce?",
        ),
    ),
    Family(
        key="password_rotation",
        title="Password Rotation Policy",
        topic="password rotation interval",
        phrase="every {n} days",
        values=(30, 45, 60, 90, 120, 180),
        fact=(
            "Passwords for all employee accounts must be rotated {v}; the identity provider blocks sign-in once a password passes the rotation interval.",
            "The password rotation interval for employee accounts is {v}, and the identity provider blocks sign-in once a password is overdue for rotation.",
            "All employee account passwords must be changed {v}; sign-in is blocked by the identity provider when the password rotation interval lapses.",
        ),
        scope=(
            "The password rotation policy covers every employee and contractor account in the corporate directory, including admin accounts.",
            "Service accounts and break-glass accounts are excluded from password rotation and are governed by the secrets management standard.",
        ),
        procedure=(
            "Change your password from the Okta dashboard before it expires; new passwords must not reuse any of your recent passwords.",
            "Users receive reminder emails before their password expires, and the IT help desk can force a password reset after identity checks.",
        ),
        contacts=(
            "The Identity and Access Management team owns the {title}; ask password rotation questions in the #it-help channel.",
            "Questions about password expiry and rotation go to the IT Security team, who review the password rotation policy every year.",
        ),
        questions=(
            "How often do we need to change our passwords?",
            "What is the password expiry period?",
            "How frequently must passwords be rotated?",
            "When do account passwords expire?",
            "How long is a password valid before it has to be reset?",
            "What's the current credential change interval?",
        ),
        chatter_questions=(
            "How often are we forced to reset our passwords now?",
            "Anyone know when our passwords expire these days?",
            "Did IT change the password rotation interval again?",
            "How long until I have to change my password this time round?",
            "Is the password expiry still the same, or did security shorten it?",
        ),
        historical_questions=(
            "How often did passwords have to be changed on {date}?",
            "What was the password expiry period as of {date}?",
        ),
        runbook_title="Okta Password Policy Runbook",
        runbook_step=(
            "In the Okta admin console, edit the default password policy and set the maximum password age so that passwords expire {v}.",
            "Open Security, Authenticators, Password in Okta and configure the password age rule so employees must rotate passwords {v}.",
        ),
        runbook_prereq=(
            "You need the Okta Super Administrator role and an approved security change ticket before editing the employee password policy.",
            "Before changing password expiry, export the current Okta password policy settings and attach them to the security change ticket.",
        ),
        runbook_verify=(
            "Check a test account in the Okta admin console and confirm its password expiry date matches the new rotation interval.",
            "Review the Okta system log for policy update events and confirm the password policy change was applied to all employee groups.",
        ),
        dependent_questions=(
            "What maximum password age should be set in the Okta password policy?",
            "Which expiry setting should Okta enforce for employee accounts?",
            "What password lifetime should be configured in Okta?",
        ),
    ),
    Family(
        key="oncall_escalation",
        title="On-Call Escalation Policy",
        topic="on-call escalation timeout",
        phrase="{n} minutes",
        values=(5, 10, 15, 20, 30, 45),
        fact=(
            "Under the on-call escalation timeout, a page the primary on-call engineer has not acknowledged within {v} escalates automatically to the secondary on-call.",
            "The on-call escalation timeout is {v}: a page that the primary on-call engineer has not acknowledged escalates to the secondary on-call.",
            "Pages not acknowledged by the primary on-call engineer within {v} are escalated automatically to the secondary on-call under the escalation timeout.",
        ),
        scope=(
            "The on-call escalation policy applies to every production service with a paging rotation, including platform and data teams.",
            "Non-production environments and informational alerts are outside the on-call escalation policy and must never page anyone.",
        ),
        procedure=(
            "Acknowledge every page in PagerDuty as soon as you see it, and hand over to the secondary on-call if you cannot work the issue.",
            "On-call engineers must keep their phone reachable and their PagerDuty contact methods current for the whole on-call shift.",
        ),
        contacts=(
            "The Site Reliability Engineering team owns the {title}; ask on-call escalation questions in the #sre-oncall channel.",
            "Questions about paging and on-call escalation go to the SRE leads, who review escalation timing after every major incident.",
        ),
        questions=(
            "How long before an unacknowledged page escalates?",
            "How many minutes does the on-call engineer have to acknowledge a page?",
            "When does a page go to the secondary on-call?",
            "What's the acknowledgement window for pages?",
            "How long do I have to ack an alert before it goes to the backup?",
            "What is the escalation timeout for on-call pages?",
        ),
        chatter_questions=(
            "How long do I get to ack a page before it escalates?",
            "Anyone know the current on-call escalation timeout?",
            "When does a page roll over to the secondary if nobody acks it?",
            "How many minutes before an unacknowledged alert pages the backup?",
            "Did the ack window for on-call pages change recently?",
        ),
        historical_questions=(
            "How long before an unacknowledged page escalated on {date}?",
            "What was the on-call acknowledgement window as of {date}?",
        ),
        runbook_title="PagerDuty Escalation Policy Runbook",
        runbook_step=(
            "In PagerDuty, edit the service escalation policy and set the escalation delay of the primary level to {v}, then save the rules.",
            "Set the PagerDuty escalation rule for the primary on-call level to escalate after {v} and apply it to every production service.",
        ),
        runbook_prereq=(
            "You need the PagerDuty Manager role on the affected services and an approved change ticket from the SRE leads before editing.",
            "Before editing escalation rules, export the current PagerDuty escalation policies and attach the export to the change ticket.",
        ),
        runbook_verify=(
            "Trigger a test incident on a staging service in PagerDuty, leave it unacknowledged and confirm it escalates at the expected time.",
            "Review the PagerDuty incident log timeline for the test incident and confirm the escalation to the secondary on-call was on time.",
        ),
        dependent_questions=(
            "What escalation delay should be set in the PagerDuty escalation policy?",
            "After how long should PagerDuty escalate to the secondary rotation?",
            "Which escalation timeout should PagerDuty rules use for the primary level?",
        ),
    ),
    Family(
        key="customer_data_retention",
        title="Customer Data Retention Policy",
        topic="customer data retention period",
        phrase="{n} months",
        values=(12, 18, 24, 36, 48, 60),
        fact=(
            "Customer personal data is kept for a customer data retention period of {v} after an account is closed, then deleted or anonymised in all production systems.",
            "The customer data retention period is {v} after account closure; the customer personal data is then deleted or anonymised everywhere.",
            "After a customer account is closed, its personal data is kept for the customer data retention period of {v} and then deleted or anonymised everywhere.",
        ),
        scope=(
            "The customer data retention policy covers all personal data about customers held in production databases, warehouses and exports.",
            "Data under a legal hold and invoices required by tax law are exempt from the customer data retention period until the hold ends.",
        ),
        procedure=(
            "Teams that store customer data must register each data store with the Privacy team and run the approved deletion job for it.",
            "Customer deletion requests received before the retention period ends are handled through the privacy request workflow.",
        ),
        contacts=(
            "The Privacy Office owns the {title}; ask customer data retention questions in the #privacy channel or email the privacy team.",
            "Questions about retaining or deleting customer data go to the Data Protection Officer, who reviews the retention policy yearly.",
        ),
        questions=(
            "How long do we keep customer data after an account closes?",
            "What is the retention period for customer records?",
            "When must customer data be deleted?",
            "How many months can we hold on to customer personal data?",
            "What's the storage limit on client information after churn?",
            "How long are former customers' records kept?",
        ),
        chatter_questions=(
            "How long are we allowed to keep data for churned customers?",
            "Anyone know the retention period on customer records these days?",
            "When do we have to purge a customer's data after they close their account?",
            "Is the customer data retention period still the same after the legal review?",
            "Legal asked, how long can we hold personal data once a client leaves?",
        ),
        historical_questions=(
            "How long was customer data retained after account closure on {date}?",
            "What was the customer data retention period as of {date}?",
        ),
        runbook_title="Snowflake Data Retention Runbook",
        runbook_step=(
            "In Snowflake, update the retention purge task so that customer rows for closed accounts are deleted after {v}, then resume the task.",
            "Set the retention parameter of the Snowflake customer purge procedure to {v} after account closure and redeploy the scheduled task.",
        ),
        runbook_prereq=(
            "You need the Snowflake DATA_ENGINEER role and sign-off from the Privacy Office before changing the customer data purge task.",
            "Before editing the purge task, take a clone of the customer tables in Snowflake so that any mistaken deletion can be undone.",
        ),
        runbook_verify=(
            "After the next run, query the Snowflake customer tables for closed accounts older than the retention period and expect no rows.",
            "Check the Snowflake task history for the customer purge task and confirm the run succeeded with the new retention parameter.",
        ),
        dependent_questions=(
            "What retention period should the Snowflake purge job use for customer tables?",
            "How long should Snowflake keep closed-account customer rows before deletion?",
            "Which retention window goes into the Snowflake data lifecycle task?",
        ),
    ),
    Family(
        key="remote_work_days",
        title="Hybrid Remote Work Policy",
        topic="remote work allowance",
        phrase="{n} days per month",
        values=(4, 6, 8, 10, 12, 16),
        fact=(
            "Employees in hybrid roles have a remote work allowance of up to {v}, agreed in advance with their manager and recorded in the desk booking tool.",
            "The remote work allowance for employees in hybrid roles is {v}, agreed in advance with their manager and recorded in the booking tool.",
            "Hybrid employees can use a remote work allowance of up to {v} from home, provided remote days are agreed with their manager and logged in the booking tool.",
        ),
        scope=(
            "The remote work policy covers all employees in hybrid roles; fully remote and field roles have their own remote work arrangements.",
            "Working remotely from another country is not covered by the remote work allowance and needs separate approval from HR and Legal.",
        ),
        procedure=(
            "Book your office and remote work days in Envoy at the start of each month, and make sure core team days are spent in the office.",
            "Remote work days that are not used cannot be carried over to the next month, and managers may ask for office days for key events.",
        ),
        contacts=(
            "People Operations owns the {title}; ask remote work questions in the #ask-people channel or through your HR business partner.",
            "Questions about remote work days and hybrid schedules go to Workplace Services, who review the remote work policy every year.",
        ),
        questions=(
            "How many days can I work from home each month?",
            "What's the monthly remote work allowance?",
            "How many WFH days are we allowed per month?",
            "How often can employees work remotely?",
            "What is the current limit on working from home?",
            "How many days away from the office does the hybrid policy allow?",
        ),
        chatter_questions=(
            "How many WFH days do we get a month now?",
            "Quick q: what's the monthly remote allowance under the hybrid policy?",
            "Is there still a cap on working from home each month?",
            "How often am I allowed to work remotely these days?",
            "Did the hybrid rules change how many days we can be out of the office?",
        ),
        historical_questions=(
            "How many remote work days per month were allowed on {date}?",
            "What was the work-from-home allowance as of {date}?",
        ),
        runbook_title="Envoy Hybrid Schedule Runbook",
        runbook_step=(
            "In the Envoy admin dashboard, open the hybrid work settings and set the monthly remote day quota for hybrid employees to {v}.",
            "Update the Envoy hybrid schedule policy so that hybrid employees can book remote work for at most {v}, then publish the policy.",
        ),
        runbook_prereq=(
            "You need the Envoy Global Admin role and written approval from People Operations before changing hybrid schedule settings.",
            "Before editing the remote day quota, export the current Envoy hybrid work settings and attach them to the change request.",
        ),
        runbook_verify=(
            "Log in to Envoy as a test hybrid employee and confirm that booking remote days beyond the new quota shows a policy warning.",
            "Check the Envoy audit log for the hybrid settings change and confirm the updated remote day quota applies to all office locations.",
        ),
        dependent_questions=(
            "What monthly remote day quota should be set in Envoy?",
            "Which remote work limit should the Envoy hybrid schedule policy enforce?",
            "How many remote days per month should Envoy let hybrid staff book?",
        ),
    ),
    Family(
        key="travel_booking_notice",
        title="Business Travel Booking Policy",
        topic="travel booking lead time",
        phrase="{n} days",
        values=(7, 10, 14, 21, 28, 30),
        fact=(
            "The travel booking lead time requires business travel, including flights and hotels, to be booked at least {v} before departure unless the trip is urgent.",
            "The travel booking lead time is {v} before departure: flights and hotels for business travel must be booked no later than that.",
            "Under the travel booking lead time, flights and hotels for business travel have to be booked at least {v} ahead of departure unless approved as urgent.",
        ),
        scope=(
            "The travel booking policy applies to all employees and contractors booking business travel paid for by the company.",
            "Travel booked and paid for by a client, and local travel by taxi or train, is outside the scope of the travel booking policy.",
        ),
        procedure=(
            "Book all business travel through Navan so that the trip is checked against policy; bookings made elsewhere are not reimbursed.",
            "Urgent trips that cannot meet the booking lead time need written approval from your department head before you book.",
        ),
        contacts=(
            "The Travel team in Finance owns the {title}; ask travel booking questions in the #travel channel or through Navan support.",
            "Questions about booking business travel go to Finance Operations, who review the travel booking policy every fiscal year.",
        ),
        questions=(
            "How far in advance do I need to book business travel?",
            "What's the minimum notice for booking flights for work?",
            "How many days ahead must trips be booked?",
            "What is the advance booking requirement for business trips?",
            "How early should I reserve a work trip to stay in policy?",
            "What lead time does the travel policy require?",
        ),
        chatter_questions=(
            "How far ahead do we have to book work flights now?",
            "Anyone know the minimum notice for booking business trips?",
            "What's the booking lead time for travel these days?",
            "How early do I need to book a trip so it stays in policy?",
            "Is the advance booking rule for work travel still the same?",
        ),
        historical_questions=(
            "How far in advance did business travel have to be booked on {date}?",
            "What was the advance booking requirement for trips as of {date}?",
        ),
        runbook_title="Navan Travel Policy Runbook",
        runbook_step=(
            "In the Navan admin console, edit the company travel policy and set the minimum advance booking for flights and hotels to {v}.",
            "Set the Navan out-of-policy rule so that flights and hotels booked less than {v} before departure require manager approval.",
        ),
        runbook_prereq=(
            "You need the Navan Travel Admin role and approval from the Finance travel lead before changing the company travel policy.",
            "Before editing the advance booking rule, export the current Navan travel policy settings and attach them to the change request.",
        ),
        runbook_verify=(
            "Search for a flight in Navan as a test traveller with a departure inside the booking window and confirm it is flagged out of policy.",
            "Review the Navan policy change history and confirm the advance booking rule update applies to every traveller group.",
        ),
        dependent_questions=(
            "What advance booking window should be configured in Navan?",
            "Which lead time should the Navan out-of-policy rule check?",
            "What minimum booking notice should Navan enforce for flights?",
        ),
    ),
    Family(
        key="parental_leave",
        title="Parental Leave Policy",
        topic="paid parental leave",
        phrase="{n} weeks",
        values=(6, 8, 12, 16, 20, 26),
        fact=(
            "Employees who become parents through birth or adoption are entitled to {v} of paid parental leave at full salary.",
            "Paid parental leave for employees who become parents through birth or adoption is {v} at full salary.",
            "Each employee who becomes a parent through birth or adoption receives {v} of paid parental leave, paid at full salary.",
        ),
        scope=(
            "The parental leave policy covers all permanent employees, regardless of gender, who become parents through birth, adoption or surrogacy.",
            "Contractors and agency workers are not eligible for paid parental leave under this policy and should check their own agreements.",
        ),
        procedure=(
            "Request parental leave in BambooHR as early as you can, and agree a return-to-work plan with your manager before the leave starts.",
            "Paid parental leave can be taken as a continuous block or split into parts within the first year after the birth or adoption.",
        ),
        contacts=(
            "People Operations owns the {title}; ask parental leave questions privately through the HR help desk or your HR business partner.",
            "Questions about paid parental leave and pay during leave go to the Benefits team, who review the parental leave policy yearly.",
        ),
        questions=(
            "How many weeks of paid parental leave do new parents get?",
            "What's the maternity and paternity leave entitlement?",
            "How long is paid leave for a new baby?",
            "How much paid time off do I get after adopting a child?",
            "What is the paid parental leave allowance?",
            "How long can a new mom or dad take off on full pay?",
        ),
        chatter_questions=(
            "Expecting soon, how many weeks of parental leave can I take?",
            "Anyone know how much paid leave you get for a new baby these days?",
            "Quick q: what do we offer for maternity and paternity leave now?",
            "How long can I take off on full pay when we adopt?",
            "Did the paid parental leave entitlement change this year?",
        ),
        historical_questions=(
            "How many weeks of paid parental leave did new parents get on {date}?",
            "What was the parental leave entitlement as of {date}?",
        ),
        runbook_title="BambooHR Parental Leave Setup Runbook",
        runbook_step=(
            "In BambooHR, open the Parental Leave time off type and set the maximum paid duration to {v} at full salary, then save the policy.",
            "Update the BambooHR parental leave policy so that eligible employees are granted {v} of paid leave for each birth or adoption.",
        ),
        runbook_prereq=(
            "You need the BambooHR Full Admin access level and an approved change request from the Benefits team before editing leave types.",
            "Before editing the parental leave type, export the current BambooHR time off policies and attach them to the change request.",
        ),
        runbook_verify=(
            "Create a test parental leave request in BambooHR for a sample employee and confirm the approved duration matches the policy.",
            "Check the BambooHR time off report for employees currently on parental leave and confirm their paid leave end dates were updated.",
        ),
        dependent_questions=(
            "What paid parental leave length should be configured in BambooHR?",
            "Which maximum duration goes into the BambooHR parental leave type?",
            "How many weeks should the BambooHR leave policy grant for a birth or adoption?",
        ),
    ),
    Family(
        key="critical_incident_response",
        title="Critical Incident Response Policy",
        topic="critical incident response time",
        phrase="{n} minutes",
        values=(5, 10, 15, 20, 30, 60),
        fact=(
            "For every critical incident, an incident commander must respond and open the incident bridge within {v}, which is the required response time.",
            "The critical incident response time is {v}: an incident commander must respond and open the incident bridge within that time.",
            "An incident commander has to respond to each critical incident and open the incident bridge within {v}, the critical incident response time.",
        ),
        scope=(
            "The critical incident response policy applies to any outage or data breach that affects all customers or a core product feature.",
            "Incidents of lower severity follow the standard incident process and are not bound by the critical incident response time.",
        ),
        procedure=(
            "Declare a critical incident in ServiceNow, page the incident commander rotation and post updates in the incident channel regularly.",
            "During a critical incident, the incident commander assigns roles, keeps the timeline and schedules a blameless review afterwards.",
        ),
        contacts=(
            "The Incident Management team owns the {title}; ask critical incident questions in the #incident-process channel.",
            "Questions about critical incident response go to the Head of Reliability, who reviews the incident response policy each quarter.",
        ),
        questions=(
            "How quickly must we respond to a critical incident?",
            "What is the response SLA for top-severity incidents?",
            "How fast does someone need to engage on a major outage?",
            "What's the required response time for critical incidents?",
            "How long do we have to start working on a critical outage?",
            "What is the response deadline for the highest severity incidents?",
        ),
        chatter_questions=(
            "If a critical incident fires, how fast does someone have to jump on it?",
            "What's the response SLA for sev incidents these days?",
            "Anyone know how quickly someone must engage on a major outage?",
            "Is the response time for top-severity incidents still the same?",
            "Did the critical incident response deadline get tightened?",
        ),
        historical_questions=(
            "What was the critical incident response time on {date}?",
            "How quickly did teams have to respond to critical outages as of {date}?",
        ),
        runbook_title="ServiceNow Incident SLA Runbook",
        runbook_step=(
            "In ServiceNow, edit the SLA definition for critical priority incidents and set the response duration to {v}, then activate it.",
            "Set the ServiceNow response SLA for critical incidents so that a breach is raised when no commander responds within {v}.",
        ),
        runbook_prereq=(
            "You need the ServiceNow sla_admin role and an approved change request from Incident Management before editing SLA definitions.",
            "Before editing the response SLA, export the current ServiceNow SLA definitions for incidents and attach them to the change request.",
        ),
        runbook_verify=(
            "Create a test critical incident in the ServiceNow sub-production instance and confirm the response SLA timer uses the new duration.",
            "Review the ServiceNow task SLA records for the next critical incidents and confirm that breach times follow the updated definition.",
        ),
        dependent_questions=(
            "What response SLA should be set in ServiceNow for critical incidents?",
            "Which response target should the ServiceNow SLA definition use for top priority tickets?",
            "What breach timer should ServiceNow start for critical incidents?",
        ),
    ),
    Family(
        key="laptop_replacement",
        title="Laptop Replacement Policy",
        topic="laptop replacement cycle",
        phrase="{n} months",
        values=(24, 30, 36, 42, 48, 60),
        fact=(
            "Company laptops follow a replacement cycle of {v}; employees become eligible for a new laptop once their current device reaches that age.",
            "The laptop replacement cycle is {v}: once a company laptop reaches that age, its user becomes eligible for a new laptop.",
            "Each company laptop is replaced after {v} in service under the laptop replacement cycle, and employees then become eligible for a new laptop.",
        ),
        scope=(
            "The laptop replacement policy covers company-owned laptops issued to employees; contractor devices and test machines are excluded.",
            "Laptops that are lost, stolen or damaged beyond repair are replaced under the incident process, not the laptop replacement cycle.",
        ),
        procedure=(
            "When your laptop is due for replacement, IT emails you a refresh link; order the new device and return the old laptop promptly.",
            "Returned laptops are wiped through Jamf and either redeployed as loaners or recycled by the approved hardware disposal partner.",
        ),
        contacts=(
            "IT Workplace owns the {title}; ask laptop replacement questions in the #it-help channel or raise a hardware request ticket.",
            "Questions about laptop refresh eligibility go to the IT Asset Management team, who review the laptop replacement policy yearly.",
        ),
        questions=(
            "How often do we get a new laptop?",
            "What is the laptop refresh cycle?",
            "When am I eligible for a laptop replacement?",
            "How old does my laptop have to be before I can get a new machine?",
            "How long until I can upgrade my work computer?",
            "What's the hardware refresh interval for employee notebooks?",
        ),
        chatter_questions=(
            "My laptop is ancient, when do I qualify for a replacement?",
            "Anyone know when I'm due for a laptop refresh?",
            "What's the laptop replacement cycle now?",
            "How old does a work laptop need to be before IT swaps it?",
            "Is the hardware refresh cycle for laptops still the same?",
        ),
        historical_questions=(
            "How often were laptops replaced on {date}?",
            "What was the laptop refresh cycle as of {date}?",
        ),
        runbook_title="Jamf Device Lifecycle Runbook",
        runbook_step=(
            "In Jamf Pro, edit the Laptop Refresh Due smart group so that it includes every laptop whose purchase date is more than {v} ago.",
            "Set the device age criterion of the Jamf refresh smart group to {v}, so laptops of that age are flagged as due for replacement.",
        ),
        runbook_prereq=(
            "You need a Jamf Pro administrator account with permission to edit smart groups and an approved change ticket from IT Workplace.",
            "Before editing the refresh smart group, check that purchase dates are populated in Jamf inventory for all company laptops.",
        ),
        runbook_verify=(
            "Open the Jamf refresh smart group and confirm that its membership count matches the laptops that the asset report lists as due.",
            "Check a recently purchased test laptop in Jamf Pro and confirm that it is not a member of the laptop refresh smart group.",
        ),
        dependent_questions=(
            "What device age should trigger a refresh flag in Jamf?",
            "Which lifecycle threshold should the Jamf smart group use for laptop replacement?",
            "At what age should Jamf mark a laptop as due for replacement?",
        ),
    ),
    Family(
        key="database_backup_interval",
        title="Database Backup Policy",
        topic="database backup interval",
        phrase="every {n} hours",
        values=(2, 4, 6, 8, 12, 24),
        fact=(
            "All production databases must be backed up {v}, which is the database backup interval, and each backup is stored encrypted in a separate cloud region.",
            "The database backup interval for production databases is {v}; every database backup is stored encrypted in a separate region.",
            "Production databases are backed up {v} under the database backup interval, with each database backup kept encrypted in a separate cloud region.",
        ),
        scope=(
            "The database backup policy covers every production PostgreSQL cluster, including read replicas that are promoted to primaries.",
            "Development and staging databases are outside the database backup policy and may be rebuilt from seed data when they are lost.",
        ),
        procedure=(
            "Database owners must register each production cluster with the backup service and test a full database restore every quarter.",
            "Failed database backups raise an alert to the database on-call, who must investigate and rerun the backup on the same day.",
        ),
        contacts=(
            "The Database Reliability team owns the {title}; ask database backup questions in the #db-reliability channel.",
            "Questions about database backups and restores go to the Data Platform leads, who review the database backup policy yearly.",
        ),
        questions=(
            "How often are production databases backed up?",
            "What is the backup frequency for our databases?",
            "How frequently do we take database snapshots?",
            "What's the maximum gap between database backups?",
            "How often does the backup job run for production Postgres?",
            "What is the current DB backup schedule?",
        ),
        chatter_questions=(
            "How often do the prod database backups run now?",
            "Anyone know the backup frequency for the production databases?",
            "What's the gap between DB snapshots these days?",
            "How much data could we lose between database backups right now?",
            "Did the backup schedule for prod Postgres change?",
        ),
        historical_questions=(
            "How often were production databases backed up on {date}?",
            "What was the database backup interval as of {date}?",
        ),
        runbook_title="pgBackRest Backup Scheduling Runbook",
        runbook_step=(
            "Edit the pgBackRest backup schedule on each database host so that an incremental backup of the production cluster runs {v}.",
            "Update the cron entry that calls pgBackRest for production clusters so that the database backup runs {v}, then reload cron.",
        ),
        runbook_prereq=(
            "You need sudo access on the database hosts as the postgres user and a working pgBackRest repository in the backup region.",
            "Before changing the schedule, run the pgBackRest check command to confirm the repository and archive settings are healthy.",
        ),
        runbook_verify=(
            "Run the pgBackRest info command the next day and confirm that the backup timestamps follow the new database backup schedule.",
            "Check the backup monitoring dashboard and confirm there are no missed pgBackRest backups for any production database cluster.",
        ),
        dependent_questions=(
            "What schedule should the pgBackRest backup cron job use?",
            "How often should pgBackRest take a backup of production clusters?",
            "Which interval should be configured for pgBackRest incremental backups?",
        ),
    ),
    Family(
        key="access_review_cadence",
        title="Access Review Policy",
        topic="access review cadence",
        phrase="every {n} days",
        values=(30, 60, 90, 120, 180, 365),
        fact=(
            "Managers must review and recertify user access to production systems {v}, the access review cadence, removing any access that is no longer needed.",
            "The access review cadence for production systems is {v}: managers review and recertify user access and remove unneeded access.",
            "Following the access review cadence, user access to production systems has to be reviewed and recertified by managers {v}, removing unneeded access.",
        ),
        scope=(
            "The access review policy covers all user and admin access to production systems, customer data stores and financial applications.",
            "Temporary break-glass access is reviewed after each use under the emergency access process rather than the access review cadence.",
        ),
        procedure=(
            "Managers complete access reviews in SailPoint by approving or revoking each entitlement listed for their direct reports.",
            "Access that is not certified by the end of an access review campaign is revoked automatically and must be requested again.",
        ),
        contacts=(
            "The Identity Governance team owns the {title}; ask access review questions in the #iam-help channel.",
            "Questions about access reviews and recertification go to the Compliance team, who present review results to the auditors yearly.",
        ),
        questions=(
            "How often do we have to review user access?",
            "What is the access recertification cycle?",
            "How frequently do managers need to certify permissions?",
            "When do access reviews happen?",
            "What's the cadence for reviewing who has access to systems?",
            "How often are entitlements recertified?",
        ),
        chatter_questions=(
            "How often do we need to do access reviews now?",
            "Anyone know the cadence for access recertification?",
            "How frequently do managers have to sign off on user permissions?",
            "Is the access review cycle still the same after the audit?",
            "What's the recert cycle for entitlements these days?",
        ),
        historical_questions=(
            "How often were access reviews required on {date}?",
            "What was the access recertification cycle as of {date}?",
        ),
        runbook_title="SailPoint Access Certification Runbook",
        runbook_step=(
            "In SailPoint IdentityNow, edit the production access certification campaign and set it to recur {v} for all manager reviews.",
            "Set the SailPoint certification schedule for production entitlements to run {v}, and keep automatic revocation of uncertified access.",
        ),
        runbook_prereq=(
            "You need the SailPoint Certification Admin role and an approved change request from Compliance before editing campaign schedules.",
            "Before editing the schedule, confirm that the SailPoint sources for production systems have completed a fresh aggregation.",
        ),
        runbook_verify=(
            "Open the SailPoint campaign schedule and confirm that the next access certification campaign date matches the new cadence.",
            "After the next campaign launches, check in SailPoint that every manager received access review items for their direct reports.",
        ),
        dependent_questions=(
            "What campaign frequency should be set in SailPoint?",
            "How often should SailPoint launch access certification campaigns?",
            "Which recurrence should the SailPoint certification schedule use?",
        ),
    ),
    Family(
        key="vpn_session_timeout",
        title="VPN Session Timeout Policy",
        topic="VPN session timeout",
        phrase="{n} hours",
        values=(2, 4, 8, 10, 12, 24),
        fact=(
            "Corporate VPN sessions reach the session timeout after {v}, after which users must sign in again with single sign-on and multi-factor authentication.",
            "The VPN session timeout is {v}; when it is reached, users must sign in to the corporate VPN again with single sign-on and MFA.",
            "A corporate VPN session ends at the session timeout of {v}, and users then have to sign in again with single sign-on and multi-factor authentication.",
        ),
        scope=(
            "The VPN session timeout policy covers every employee and contractor connecting to the corporate VPN from a laptop or a phone.",
            "Site-to-site tunnels and machine-to-machine VPN connections are outside the VPN session timeout policy and use certificates.",
        ),
        procedure=(
            "Save your work before the VPN session timeout is reached; the VPN client warns you shortly before it disconnects your session.",
            "If you are disconnected from the VPN unexpectedly, reconnect through the VPN client and report repeated drops to the IT help desk.",
        ),
        contacts=(
            "The Network Security team owns the {title}; ask VPN session questions in the #it-help channel or raise a network support ticket.",
            "Questions about VPN timeouts and remote access go to the Network Security leads, who review the VPN session policy every year.",
        ),
        questions=(
            "How long does a VPN session last before I have to log in again?",
            "What is the VPN timeout?",
            "When does the VPN disconnect me?",
            "How long can I stay connected to the VPN without re-authenticating?",
            "What's the maximum remote access session length?",
            "After how many hours does the VPN log you out?",
        ),
        chatter_questions=(
            "How long before the VPN kicks me out these days?",
            "Anyone know the VPN session timeout right now?",
            "How many hours can I stay on the VPN before re-authenticating?",
            "Did they shorten the VPN timeout, or is it just me getting logged out?",
            "How long can a remote access session stay up these days?",
        ),
        historical_questions=(
            "How long did VPN sessions last before re-authentication on {date}?",
            "What was the VPN session timeout as of {date}?",
        ),
        runbook_title="GlobalProtect Session Settings Runbook",
        runbook_step=(
            "In the GlobalProtect portal configuration, set the login lifetime of the corporate VPN gateway to {v}, then commit the change.",
            "Update the GlobalProtect gateway client settings so that VPN sessions expire after {v}, and push the configuration to all gateways.",
        ),
        runbook_prereq=(
            "You need administrator access to the Panorama console that manages GlobalProtect and an approved network change ticket.",
            "Before changing the session lifetime, back up the running GlobalProtect gateway configuration and attach it to the change ticket.",
        ),
        runbook_verify=(
            "Connect with a test account through GlobalProtect and confirm in the gateway session list that the session expiry uses the new lifetime.",
            "Review the GlobalProtect system logs the next day and confirm that VPN sessions are ending when the new session lifetime is reached.",
        ),
        dependent_questions=(
            "What login lifetime should be set in the GlobalProtect portal?",
            "Which session timeout should GlobalProtect gateways enforce?",
            "What maximum session length should GlobalProtect be configured with?",
        ),
    ),
    Family(
        key="purchase_approval_threshold",
        title="Vendor Purchase Approval Policy",
        topic="purchase approval threshold",
        phrase="${n}",
        values=(500, 1000, 2500, 5000, 10000, 25000),
        fact=(
            "Any vendor purchase above the approval threshold of {v} requires approval from Finance in addition to the requesting manager before ordering.",
            "The purchase approval threshold is {v}: vendor purchases above it need Finance approval as well as manager approval before ordering.",
            "Vendor purchases of more than {v}, the purchase approval threshold, must be approved by Finance as well as by the requesting manager before ordering.",
        ),
        scope=(
            "The purchase approval policy covers all purchases of goods and services from external vendors, including renewals and upgrades.",
            "Payroll, taxes and intercompany transfers are outside the vendor purchase approval policy and follow the treasury procedures.",
        ),
        procedure=(
            "Raise every vendor purchase as a requisition in Coupa; splitting a purchase to stay under the approval threshold is not allowed.",
            "New vendors must pass the security and legal review before a purchase request can be approved and a purchase order issued.",
        ),
        contacts=(
            "The Procurement team owns the {title}; ask purchase approval questions in the #procurement channel or through Coupa support.",
            "Questions about purchase approvals and spending limits go to the Finance controller, who reviews the approval policy yearly.",
        ),
        questions=(
            "Above what amount does a purchase need finance approval?",
            "What's the vendor spending limit before I need sign-off?",
            "How much can I spend with a supplier without extra approval?",
            "What is the purchase approval threshold?",
            "When does a vendor order require finance review?",
            "What's the maximum purchase a manager can approve alone?",
        ),
        chatter_questions=(
            "What's the spend limit before a vendor purchase needs finance approval?",
            "Anyone know how much we can spend with a vendor before finance has to sign off?",
            "Is the purchase approval threshold still the same this year?",
            "At what amount does a vendor order go to finance for review?",
            "How big a purchase can my manager approve on their own?",
        ),
        historical_questions=(
            "What was the purchase approval threshold on {date}?",
            "Above what amount did vendor purchases need finance approval as of {date}?",
        ),
        runbook_title="Coupa Approval Chain Runbook",
        runbook_step=(
            "In Coupa, edit the requisition approval chain and set the amount above which Finance approval is required to {v}, then save.",
            "Update the Coupa approval rule so that requisitions above {v} are routed to Finance after the manager approval step.",
        ),
        runbook_prereq=(
            "You need the Coupa Administrator role and written sign-off from the Finance controller before editing approval chains.",
            "Before changing the approval rule, export the current Coupa approval chains and attach the export to the change request.",
        ),
        runbook_verify=(
            "Submit test requisitions in the Coupa test instance just below and just above the new threshold and confirm the routing differs.",
            "Review the Coupa approval chain history and confirm that the Finance approval step now uses the updated purchase threshold.",
        ),
        dependent_questions=(
            "What threshold should the Coupa approval chain use for finance review?",
            "Above which amount should Coupa route requisitions to finance?",
            "What limit should be configured in the Coupa approval rule?",
        ),
    ),
    Family(
        key="security_training_deadline",
        title="Security Awareness Training Policy",
        topic="security training deadline",
        phrase="{n} days",
        values=(7, 14, 21, 30, 45, 60),
        fact=(
            "The deadline for new employees to complete security awareness training is {v} from their start date, before access to customer data is granted.",
            "The security training deadline for new employees is {v} after their start date; access to customer data waits until training is done.",
            "Security awareness training has to be completed by new employees within {v} of starting, the training deadline, before customer data access is granted.",
        ),
        scope=(
            "The security awareness training policy covers all new employees and contractors with access to company systems or customer data.",
            "Annual security refresher training for existing staff follows its own schedule and is not bound by the new joiner training deadline.",
        ),
        procedure=(
            "New joiners receive a Cornerstone enrolment email on their first day and complete the security awareness modules and the final quiz.",
            "Managers are notified when a new joiner misses the security training deadline, and system access is suspended until it is done.",
        ),
        contacts=(
            "The Security Awareness team owns the {title}; ask security training questions in the #security-help channel.",
            "Questions about mandatory security training go to the Information Security team, who review the training policy every year.",
        ),
        questions=(
            "How long do new hires have to finish security training?",
            "What's the deadline for completing onboarding security awareness training?",
            "When must new starters complete the security course?",
            "How many days after joining is security training due?",
            "What is the completion window for mandatory security training?",
            "By when do new employees need to pass the phishing awareness module?",
        ),
        chatter_questions=(
            "New starter here, how long have I got to do the security training?",
            "Anyone know the deadline for the onboarding security course?",
            "Is there a deadline for new hires to do the phishing module?",
            "Is the security training window for new joiners still the same?",
            "When's the cutoff for finishing the mandatory security awareness training?",
        ),
        historical_questions=(
            "How long did new hires have to complete security training on {date}?",
            "What was the security training deadline for new starters as of {date}?",
        ),
        runbook_title="Cornerstone Training Campaign Runbook",
        runbook_step=(
            "In Cornerstone, edit the New Hire training campaign and set the relative due date to {v} after enrolment, then save the campaign.",
            "Update the Cornerstone onboarding campaign so that new users must finish the security training within {v} of being enrolled.",
        ),
        runbook_prereq=(
            "You need the Cornerstone Training Admin role and confirmation that new users are synced from the directory before editing campaigns.",
            "Before editing the onboarding campaign, check that the Cornerstone user provisioning sync ran successfully for recent new hires.",
        ),
        runbook_verify=(
            "Enrol a test user in the Cornerstone onboarding campaign and confirm that the due date shown on the training page matches the policy.",
            "Review the Cornerstone campaign report for recent new hires and confirm their security training due dates follow the updated deadline.",
        ),
        dependent_questions=(
            "What due date should be configured in the Cornerstone onboarding campaign?",
            "How many days should Cornerstone give new users to complete training?",
            "Which completion window should the Cornerstone enrolment rule use?",
        ),
    ),
    Family(
        key="audit_log_retention",
        title="Audit Log Retention Policy",
        topic="audit log retention period",
        phrase="{n} days",
        values=(90, 180, 365, 400, 730, 1095),
        fact=(
            "Security audit logs from all production systems must be kept for an audit log retention period of {v} in searchable storage before archiving or deletion.",
            "The audit log retention period is {v}: security audit logs from production systems stay searchable for that long before deletion.",
            "All production systems must keep their security audit logs searchable for the retention period of {v}, after which the audit logs are archived or deleted.",
        ),
        scope=(
            "The audit log retention policy covers security audit logs from production systems, identity providers and cloud provider accounts.",
            "Application debug logs and metrics are outside the audit log retention policy and follow the observability retention standard.",
        ),
        procedure=(
            "System owners must forward audit logs to the central Splunk platform and must not delete audit logs before the retention period ends.",
            "Requests to export audit logs for an investigation or an external audit are made through the Security Operations request form.",
        ),
        contacts=(
            "The Security Operations team owns the {title}; ask audit log retention questions in the #secops channel.",
            "Questions about audit logs and their retention go to the Compliance team, who check audit log retention during every audit cycle.",
        ),
        questions=(
            "How long do we keep audit logs?",
            "What is the retention period for audit trails?",
            "How many days of security logs are retained?",
            "When are audit log entries deleted?",
            "What's the log retention requirement for compliance?",
            "How far back can we search audit events?",
        ),
        chatter_questions=(
            "How long are audit logs kept these days?",
            "Anyone know the retention period on audit trails now?",
            "How far back do the audit logs go if I need to search old events?",
            "How long until old audit log entries get purged?",
            "Is the compliance log retention requirement still the same?",
        ),
        historical_questions=(
            "How long were audit logs retained on {date}?",
            "What was the audit log retention period as of {date}?",
        ),
        runbook_title="Splunk Index Retention Runbook",
        runbook_step=(
            "In Splunk, edit the index settings of the audit index so that audit log events are kept searchable for {v} before they are frozen.",
            "Set the retention of the Splunk audit index to {v} in the indexes configuration and roll the change out to all indexer peers.",
        ),
        runbook_prereq=(
            "You need the Splunk admin role on the cluster manager and enough storage headroom on the indexers for the new retention period.",
            "Before changing audit index retention, check with the Splunk platform team that the indexer storage forecast covers the change.",
        ),
        runbook_verify=(
            "Run a Splunk search over the audit index and confirm that the oldest searchable audit events match the new retention period.",
            "Check the Splunk monitoring console for the audit index and confirm its retention setting was applied on every indexer peer.",
        ),
        dependent_questions=(
            "What retention should be set on the Splunk audit index?",
            "How long should Splunk keep data in the audit index before freezing it?",
            "Which retention period goes into the Splunk indexes configuration for audit logs?",
        ),
    ),
)
